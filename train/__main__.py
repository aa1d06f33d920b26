"""`python -m lwap.train CONFIG [...]`: the same as `lwap train`, in a form torchrun can start."""

import sys

from lwap.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
