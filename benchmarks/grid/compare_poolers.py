"""The repository's pooler comparison: `lwap compare` with the repository's own folders.

    python benchmarks/grid/compare_poolers.py run --regime unsup [--seeds 0 1 2] [--poolers lwap cls ...]
    python benchmarks/grid/compare_poolers.py run --regime sup
    python benchmarks/grid/compare_poolers.py run --regime unsup --backbone ../shared/models/NAME [--set K=V]
    python benchmarks/grid/compare_poolers.py report   # writes docs/RESULTS.md from the cell files
    python benchmarks/grid/compare_poolers.py figure   # draws docs/layer_attention.png
    python -m benchmarks.grid.compare_poolers report   # the same, as a module

The same subcommands as `lwap compare` (see `lwap compare --help` and lwap/compare, installed from
compare/), with the study's rows (configs/compare/rows/study.yaml), the cells in
benchmarks/results/compare (tracked), models and checkpoints in outputs/compare (not tracked), the report
in docs/RESULTS.md and the figure in docs/layer_attention.png; and two of its own, the back-fill of
layer-attention profiles into older cells (`attach-profiles`, `reprofile`: benchmarks/grid/profiles.py).
Run from anywhere: it works in the repository root, where the grids' relative backbone paths
(../shared/models/...) were recorded.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO

RESULTS = "benchmarks/results/compare"
ROWS = "configs/compare/rows/study.yaml"
DEFAULTS = {
    "work_dir": "outputs/compare",
    ("report", "output"): "docs/RESULTS.md",
    ("figure", "output"): "docs/layer_attention.png",
}


def main(argv: list[str] | None = None) -> int:
    from benchmarks.grid import profiles
    from benchmarks.grid.report_repository import RepositoryReport
    from benchmarks.grid.study import PLANNED_SEEDS
    from lwap.compare import cli
    from lwap.errors import LwapError

    os.chdir(REPO)
    parser = argparse.ArgumentParser(prog="compare_poolers.py", description=__doc__.splitlines()[0])
    commands = cli.add_arguments(parser, results=RESULTS, rows=ROWS)
    profiles.add_subcommands(commands, RESULTS, PLANNED_SEEDS)
    args = parser.parse_args(argv)
    if getattr(args, "work_dir", "") is None:
        args.work_dir = DEFAULTS["work_dir"]
    if getattr(args, "output", "") is None:
        args.output = DEFAULTS[(args.compare_command, "output")]
    try:
        if args.compare_command in profiles.HELP:
            return profiles.run(args)
        return cli.run(args, RepositoryReport)
    except LwapError as error:  # a user's mistake: one line, exit 2, as `lwap compare` does
        print(f"compare_poolers.py: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
