"""Compare poolers on one backbone under one budget: `lwap compare run | report | figure`.

`run` trains and evaluates the missing cells of a grid (regime × rows × seeds) into the results folder,
one small JSON file a cell; a stopped run resumes where it stopped, and several `run` processes can share
one grid (one per core, each with OMP_NUM_THREADS=1). `report` writes the tables and seed-spread
verdicts as Markdown, `figure` draws what LWAP attends to and each pooler's alignment vs uniformity, both
from the cell files alone. The rows are the registry's poolers and those of `--rows FILE` (rows.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lwap.compare.geometry import FIGURE
from lwap.compare.grid import BACKBONE, REGIMES, Grid, shipped_config
from lwap.compare.rows import Rows, load_rows
from lwap.errors import ConfigError

if TYPE_CHECKING:
    from lwap.compare.report import Report

HELP = "compare poolers under one budget: run a grid of cells, report, figure"
DEFAULT_RESULTS = "lwap-compare"


def add_folders(sub: argparse.ArgumentParser, results: str) -> None:
    """--results, --work-dir and --backbone: where a grid's cells and work go, and of which backbone."""
    where = f"the folder of the cell files (default: ./{results})"
    sub.add_argument("--results", default=results, help=where)
    sub.add_argument("--work-dir", default=None, help="models, checkpoints and logs (default: RESULTS/work)")
    sub.add_argument("--backbone", default=BACKBONE, help="hub id or folder (default: the packaged MiniLM)")


def add_arguments(
    parser: argparse.ArgumentParser, results: str = DEFAULT_RESULTS, rows: str | None = None
) -> argparse._SubParsersAction:
    """The subcommands; `results` is the default results folder and `rows` the default rows file (the
    repository's wrapper passes its own, and adds subcommands of its own to what this returns)."""
    commands = parser.add_subparsers(dest="compare_command", required=True, metavar="SUBCOMMAND")

    def rows_file(sub: argparse.ArgumentParser) -> None:
        where = f"default: {rows}" if rows else "default: the registry's poolers alone"
        sub.add_argument(
            "--rows",
            default=rows,
            metavar="FILE",
            help=f"a YAML file of rows beyond the registry's poolers, or a shipped one's name ({where})",
        )

    run = commands.add_parser("run", help="train and evaluate the missing cells of one regime")
    add_folders(run, results)
    rows_file(run)
    run.add_argument("--regime", choices=tuple(REGIMES), required=True)
    run.add_argument("--seeds", type=int, nargs="+", default=None, help="default: the rows file's seeds")
    run.add_argument(
        "--poolers",
        nargs="+",
        default=None,
        metavar="ROW",
        help="rows to run: the registry's poolers and those of --rows (default: the planned rows)",
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
    rows_file(report)
    figure = commands.add_parser(
        "figure", help=f"draw the layer attention of the LWAP cells and, beside it, {FIGURE} (PNGs)"
    )
    figure.add_argument(
        "--results", default=results, help=f"the folder of the cell files (default: ./{results})"
    )
    figure.add_argument("--output", default=None, help="the PNG (default: RESULTS/layer_attention.png)")
    rows_file(figure)
    return commands


def grid_of(args: argparse.Namespace) -> Grid:
    results = Path(args.results).resolve()
    work = Path(args.work_dir).resolve() if getattr(args, "work_dir", None) else results / "work"
    return Grid(results, work)


def check_run_arguments(args: argparse.Namespace, rows: Rows) -> None:
    """Catch a user's mistake before any cell starts: an unknown row, a backbone that is not there, a
    --set (or a row's setting) the config does not accept, a dev set other than STS-B."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    unknown = [p for p in args.poolers if p not in rows.rows]
    if unknown:
        raise ConfigError(f"unknown pooler {', '.join(unknown)}: choose from {', '.join(rows.order)}")
    from lwap.backbones import check_backbone, resolve_backbone
    from lwap.config_files import resolve_config
    from lwap.train.config import load_config

    resolve_backbone(args.backbone)
    backbone = [] if args.backbone == BACKBONE else [f"model.backbone={args.backbone}"]
    path = resolve_config(shipped_config(REGIMES[args.regime]))
    config = load_config(path, [*backbone, *args.set])
    if config.eval.dev != "stsb":
        raise ConfigError(
            f"eval.dev: {config.eval.dev!r}: lwap compare keeps each cell's best STS-B dev checkpoint and "
            "reports its STS-B dev scores; leave eval.dev at stsb"
        )
    for row in args.poolers:  # a row's own settings, checked as its cells will use them
        sets = [f"model.pooling={rows.pooling_of(row)}", *rows.overrides(row, args.regime)]
        try:
            load_config(path, [*backbone, *sets, *args.set])
        except ConfigError as error:
            raise ConfigError(f"row {row}: {error}") from None
    # what the folder holds (lwap.checks.model_folder), before any cell starts: one line, not a failed cell
    check_backbone(args.backbone, trust_remote_code=config.model.trust_remote_code)


def run(args: argparse.Namespace, make_report: Callable[..., Report] | None = None) -> int:
    """One subcommand; `make_report(results, rows=...)` makes the report of a results folder for `report`
    and `figure` (the repository's wrapper passes its own, benchmarks/grid/report_repository.py; else the
    generic `lwap.compare.report.Report`, which names `lwap compare` and the results folder)."""
    grid = grid_of(args)
    command = args.compare_command
    rows = load_rows(args.rows)
    if command == "run":
        from lwap.compare.runner import run_grid

        args.poolers = list(rows.planned) if args.poolers is None else args.poolers
        args.seeds = list(rows.seeds) if args.seeds is None else args.seeds
        check_run_arguments(args, rows)
        run_grid(
            grid,
            args.backbone,
            args.regime,
            args.poolers,
            args.seeds,
            args.set,
            untouched=not args.no_untouched,
            tasks=args.tasks,
            defined=rows,
        )
    elif command in ("report", "figure"):
        from lwap.compare.report import Report, write_report

        report = (make_report or Report)(grid.results, rows=rows)
        if command == "report":
            output = Path(args.output) if args.output else grid.results / "RESULTS.md"
            write_report(report, output)
            print(f"wrote {output}")
        else:
            draw_figures(report, Path(args.output) if args.output else grid.results / "layer_attention.png")
    return 0


def draw_figures(report: Report, output: Path) -> None:
    """The layer-attention figure at `output` and, beside it, the geometry figure (where cells have it)."""
    from lwap.compare.attention import draw_figure
    from lwap.compare.geometry_section import draw_geometry_figure

    draw_figure(report.results, output, report.wording, report.rows)
    print(f"wrote {output}")
    if draw_geometry_figure(report.geometry_panels(), output.with_name(FIGURE), report.wording):
        print(f"wrote {output.with_name(FIGURE)}")
