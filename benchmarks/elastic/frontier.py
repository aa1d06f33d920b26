"""The elastic frontier (issue 51): quality and encode speed at each depth and dimension, per pooler.

    python benchmarks/elastic/frontier.py run [--grids NAME[/REGIME] ...] [--seeds 0 1 2] [--rows ROW ...]
    python benchmarks/elastic/frontier.py speed [--grids ...]
    python benchmarks/elastic/frontier.py report [--output FILE] [--figure FILE]
    python benchmarks/elastic/frontier.py estimate      # CPU hours still needed, from committed cells
    python benchmarks/elastic/frontier.py run --smoke   # the pipeline end to end on a tiny budget

For `lwap`, `mean` of layer k, `first_last_avg` over 1..k and `all_levels_avg` over 0..k, each trained
depth-elastic (`objective.depths: [1..L]`) and each trained as usual then truncated, plus
sentence-transformers' AdaptiveLayerLoss with mean pooling as the anchor (frontier_grid.py): each cell is
trained with the comparison grid's budget and evaluated at every depth 1..L and every dimension of its
grid (7 STS tasks and SciFact, as the grid evaluates). Cells are small JSON files under
benchmarks/results/elastic/ (tracked); models and partial evaluations under outputs/elastic/ (not
tracked; a done cell's checkpoints are removed, its kept model stays: about 90 MB a MiniLM cell). A
stopped run resumes where it stopped (training from its checkpoint, evaluation at the next depth);
several processes can share a grid (each cell is locked). Pre-registered in docs/COMPARE.md.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.elastic.frontier_grid import (
    GRIDS,
    REPO,
    RESULTS,
    ROWS,
    SEEDS,
    SMOKE_RESULTS,
    SMOKE_WORK,
    WORK,
    find_grids,
    row_name,
)

REPORT = "REPORT.md"  # in the results folder
FIGURE = Path("docs/elastic_frontier.png")
SMOKE_GRIDS = ["all-MiniLM-L6-v2/unsup", "bert-prenorm-4l256-sentences/sup"]


@functools.cache  # each grid's committed cells are read once per process
def comparison_seconds(grid: Any) -> tuple[float, int]:
    """A cell's seconds as the comparison grid's committed cells of `grid`'s budget took them (median
    training + median full-depth evaluation; frontier_cells.SharedForward reads every depth and
    dimension from one full-depth forward per batch), and how many cells that reads."""
    from lwap.compare.cells import read
    from lwap.compare.grid import Grid as ComparisonGrid

    compare = REPO / "benchmarks/results/compare"
    folder = ComparisonGrid(compare, compare / "work").cells_dir(grid.backbone) / grid.regime
    cells = [read(p) for p in sorted(folder.glob("*.json"))]
    seconds = statistics.median(c["train_wall_seconds"] for c in cells) + statistics.median(
        c["eval_wall_seconds"] for c in cells
    )
    return seconds, len(cells)


def estimate(results: Path = RESULTS) -> list[str]:
    """Hours of CPU the frontier still needs, per grid. Where a grid has cells of its own, their median
    time (training + evaluation; cells that trained in one run: a resumed run's time is its last part) is
    the measure. Before a grid has one, the comparison grid's cells of its budget, times the ratio the
    measured grids show (the first grid's cells took 2.2 times those: the machine, not the depth loss,
    which costs 1-11 % a step, step_cost.py)."""
    from lwap.checks.files import read_json_object

    found = []  # (grid, cells done, seconds of the cells that trained in one run)
    for grid in GRIDS:
        done = [read_json_object(p) for p in sorted((results / grid.name / grid.regime).glob("*.json"))]
        timed = [
            c["train_wall_seconds"] + c["eval_wall_seconds"]
            for c in done
            if not (c.get("train") or {}).get("resumed_from")
        ]
        found.append((grid, len(done), timed))
    ratios = [statistics.median(t) / comparison_seconds(g)[0] for g, _, t in found if t]
    ratio = statistics.median(ratios) if ratios else 1.0
    lines = [
        "| grid | cells done | per cell s | measured on | cells left | hours left |",
        "| --- | ---: | ---: | --- | ---: | ---: |",
    ]
    total = 0.0
    for grid, done, timed in found:
        if timed:
            per_cell = statistics.median(timed)
            source = f"{len(timed)} frontier cell{'s' if len(timed) != 1 else ''} (median)"
        else:
            seconds, count = comparison_seconds(grid)
            per_cell = seconds * ratio
            source = f"{count} comparison cells (median) × {ratio:.2f}"
        left = len(grid.rows) * len(SEEDS) - done
        total += per_cell * left / 3600
        lines.append(
            f"| {grid.name}/{grid.regime} | {done} | {per_cell:.0f} | {source} | {left} | "
            f"{per_cell * left / 3600:.1f} |"
        )
    lines.append(f"| all | | | | | {total:.1f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    from lwap.errors import LwapError

    parser = argparse.ArgumentParser(prog="frontier.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="train and evaluate the missing cells")
    run.add_argument("--grids", nargs="*", help="backbone or backbone/regime (default: all)")
    run.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS))
    run.add_argument(
        "--rows", nargs="*", help=f"rows (default: all): {', '.join(row_name(*r) for r in ROWS)}"
    )
    run.add_argument(
        "--smoke", action="store_true", help="a tiny budget, results under outputs/elastic-smoke"
    )
    speed = commands.add_parser("speed", help="time encoding at each depth, per backbone and pooler")
    speed.add_argument("--grids", nargs="*")
    speed.add_argument("--sentences", type=int, default=2000)
    speed.add_argument(
        "--smoke", action="store_true", help="200 sentences, 1 repeat, under outputs/elastic-smoke"
    )
    report = commands.add_parser("report", help="the Markdown section and the figure")
    report.add_argument("--smoke", action="store_true", help="report the smoke cells (under outputs/)")
    report.add_argument("--output", type=Path)
    report.add_argument("--figure", type=Path)
    commands.add_parser("estimate", help="CPU hours still needed, from the committed cells")
    args = parser.parse_args(argv)
    os.chdir(REPO)  # the budgets' relative paths are the repository root's
    results, work = (SMOKE_RESULTS, SMOKE_WORK) if getattr(args, "smoke", False) else (RESULTS, WORK)
    try:
        if args.command == "run":
            from benchmarks.elastic.frontier_cells import run_grid

            grids = find_grids(args.grids or (SMOKE_GRIDS if args.smoke else None))
            seeds = args.seeds if not args.smoke or args.seeds != list(SEEDS) else [0]
            for grid in grids:
                run_grid(grid, seeds, results, work, args.smoke, args.rows)
        elif args.command == "speed":
            from benchmarks.elastic.frontier_speed import measure

            grids = {g.name: g for g in find_grids(args.grids or (SMOKE_GRIDS if args.smoke else None))}
            for grid in grids.values():
                count, repeats = (200, 1) if args.smoke else (args.sentences, 3)
                print(measure(grid, results / "speed" / f"{grid.name}.json", count, repeats))
        elif args.command == "report":
            from benchmarks.elastic.frontier_report import draw_figure, report_text
            from lwap.checks.files import write_text_atomically

            output = args.output or results / REPORT
            figure = args.figure or (results / FIGURE.name if args.smoke else FIGURE)
            output.parent.mkdir(parents=True, exist_ok=True)
            drawn = draw_figure(results, results / "speed", figure)
            link = os.path.relpath(figure, output.parent) if drawn else None
            write_text_atomically(output, report_text(results, results / "speed", link))
            print(f"wrote {output}" + (f" and {figure}" if drawn else ""))
        else:
            print("\n".join(estimate(results)))
    except LwapError as error:
        print(f"frontier.py: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
