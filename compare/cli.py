"""Compare poolers on one backbone under one budget: `lwap compare run | report | figure`.

`run` trains and evaluates the missing cells of a grid (regime × poolers × seeds) into the results folder,
one small JSON file a cell; a stopped run resumes where it stopped, and several `run` processes can share
one grid (one per core, each with OMP_NUM_THREADS=1). `report` writes the tables and seed-spread
verdicts as Markdown, `figure` draws what LWAP attends to and each pooler's alignment vs uniformity, both
from the cell files alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lwap.compare.geometry import FIGURE
from lwap.compare.grid import BACKBONE, PLANNED_SEEDS, POOLERS, REGIMES, ROWS, Grid, shipped_config
from lwap.errors import ConfigError

if TYPE_CHECKING:
    from lwap.compare.report import Report

HELP = "compare poolers under one budget: run a grid of cells, report, figure"
DEFAULT_RESULTS = "lwap-compare"


def add_arguments(parser: argparse.ArgumentParser, results: str = DEFAULT_RESULTS) -> None:
    """The subcommands; `results` is the default results folder (the repository's wrapper passes its own)."""
    commands = parser.add_subparsers(dest="compare_command", required=True, metavar="SUBCOMMAND")

    def folders(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--results", default=results, help=f"the folder of the cell files (default: ./{results})"
        )
        sub.add_argument(
            "--work-dir", default=None, help="models, checkpoints and logs (default: RESULTS/work)"
        )
        sub.add_argument(
            "--backbone", default=BACKBONE, help="hub id or folder (default: the packaged MiniLM)"
        )

    run = commands.add_parser("run", help="train and evaluate the missing cells of one regime")
    folders(run)
    run.add_argument("--regime", choices=tuple(REGIMES), required=True)
    run.add_argument("--seeds", type=int, nargs="+", default=list(PLANNED_SEEDS))
    run.add_argument(
        "--poolers",
        nargs="+",
        default=list(POOLERS),
        metavar="POOLER",
        help=f"poolers and LWAP variants: {' '.join(ROWS)} (default: {' '.join(POOLERS)})",
    )
    run.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="budget override for every cell"
    )
    run.add_argument(
        "--tasks",
        choices=("all", "sts"),
        default="all",
        help="evaluate on all tasks (default) or the 7 STS tasks only (no SciFact; recorded in the cell)",
    )
    run.add_argument("--no-untouched", action="store_true", help="skip the untouched-backbone reference rows")
    report = commands.add_parser("report", help="write the comparison as Markdown from the cell files")
    report.add_argument(
        "--results", default=results, help=f"the folder of the cell files (default: ./{results})"
    )
    report.add_argument("--output", default=None, help="the Markdown file (default: RESULTS/RESULTS.md)")
    figure = commands.add_parser(
        "figure", help=f"draw the layer attention of the LWAP cells and, beside it, {FIGURE} (PNGs)"
    )
    figure.add_argument(
        "--results", default=results, help=f"the folder of the cell files (default: ./{results})"
    )
    figure.add_argument("--output", default=None, help="the PNG (default: RESULTS/layer_attention.png)")
    attach = commands.add_parser(
        "attach-profiles", help="add LWAP profiles to older cells from their eval output"
    )
    folders(attach)
    reprofile = commands.add_parser(
        "reprofile",
        help="retrain `lwap` cells without a profile (and without their eval output) to measure it",
    )
    folders(reprofile)
    reprofile.add_argument("--regimes", nargs="+", choices=tuple(REGIMES), default=list(REGIMES))
    reprofile.add_argument("--seeds", type=int, nargs="+", default=list(PLANNED_SEEDS))


def grid_of(args: argparse.Namespace) -> Grid:
    results = Path(args.results).resolve()
    work = Path(args.work_dir).resolve() if getattr(args, "work_dir", None) else results / "work"
    return Grid(results, work)


def check_run_arguments(args: argparse.Namespace) -> None:
    """Catch a user's mistake before any cell starts: an unknown pooler, a backbone that is not there,
    a --set the config does not accept."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    unknown = [p for p in args.poolers if p not in ROWS]
    if unknown:
        raise ConfigError(f"unknown pooler {', '.join(unknown)}: choose from {', '.join(ROWS)}")
    from lwap.backbones import check_backbone, resolve_backbone
    from lwap.config_files import resolve_config
    from lwap.train.config import load_config

    resolve_backbone(args.backbone)
    backbone = [] if args.backbone == BACKBONE else [f"model.backbone={args.backbone}"]
    config = load_config(resolve_config(shipped_config(REGIMES[args.regime])), [*backbone, *args.set])
    # what the folder holds (lwap.checks.model_folder), before any cell starts: one line, not a failed cell
    check_backbone(args.backbone, trust_remote_code=config.model.trust_remote_code)


def run(args: argparse.Namespace, make_report: Callable[[Path], Report] | None = None) -> int:
    """One subcommand; `make_report` makes the report of a results folder for `report` and `figure` (the
    repository's wrapper passes its own, benchmarks/grid/report_repository.py; else the generic
    `lwap.compare.report.Report`, which names `lwap compare` and the results folder)."""
    grid = grid_of(args)
    command = args.compare_command
    if command == "run":
        from lwap.compare.runner import run_grid

        check_run_arguments(args)
        run_grid(
            grid,
            args.backbone,
            args.regime,
            args.poolers,
            args.seeds,
            args.set,
            untouched=not args.no_untouched,
            tasks=args.tasks,
        )
    elif command in ("report", "figure"):
        from lwap.compare.report import Report, write_report

        report = (make_report or Report)(grid.results)
        if command == "report":
            output = Path(args.output) if args.output else grid.results / "RESULTS.md"
            write_report(report, output)
            print(f"wrote {output}")
        else:
            draw_figures(report, Path(args.output) if args.output else grid.results / "layer_attention.png")
    elif command == "attach-profiles":
        from lwap.compare.maintenance import attach_profiles

        attach_profiles(grid, args.backbone)
    elif command == "reprofile":
        from lwap.compare.maintenance import reprofile

        reprofile(grid, args.backbone, args.regimes, args.seeds)
    return 0


def draw_figures(report: Report, output: Path) -> None:
    """The layer-attention figure at `output` and, beside it, the geometry figure (where cells have it)."""
    from lwap.compare.attention import draw_figure
    from lwap.compare.geometry_section import draw_geometry_figure

    draw_figure(report.results, output, report.wording)
    print(f"wrote {output}")
    if draw_geometry_figure(report.geometry_panels(), output.with_name(FIGURE), report.wording):
        print(f"wrote {output.with_name(FIGURE)}")
