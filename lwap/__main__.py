import sys

from lwap.cli import main

sys.exit(main())
