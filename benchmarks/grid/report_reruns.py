"""What a re-run reproduces: one cell per backbone run again, twice with identical settings, compared with
each other (exactly equal?) and with the committed cell (within that pooler's seed spread?).

The re-runs are cell files written to a scratch results folder (`benchmarks/grid/rerun_cells.sh`) and kept
under RESULTS/reruns/<backbone>/run<N>.json; the repository's report reads them from there.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from lwap.compare import cells as cellfiles
from lwap.compare.grid import REGIMES, STS_COLUMNS, Grid
from lwap.compare.settings import COMPARED, differences

STS_KEYS = (*STS_COLUMNS, "avg_all")
RERUN_COMMAND = "bash benchmarks/grid/rerun_cells.sh"  # how the re-runs were made, as the section names it


def rerun_records(results: Path) -> dict[str, list[dict[str, Any]]]:
    """Backbone name -> its re-run cells, in run order."""
    found: dict[str, list[dict[str, Any]]] = {}
    for folder in sorted((results / "reruns").glob("*")):
        runs = [cellfiles.read(path) for path in sorted(folder.glob("run*.json"))]
        if runs:
            found[folder.name] = runs
    return found


def trajectory(cell: dict[str, Any]) -> str:
    """STS-B dev × 100 by step; for a cell made before cells kept the trajectory, step 0 and the best."""
    train = cell["train"]
    steps = train.get("dev_spearman_by_step")
    if not steps:
        steps = [[0, train["dev_spearman_before"]], [train["best_step"], train["best_dev_spearman"]]]
        return ", ".join(f"{step}: {score * 100:.2f}" for step, score in steps) + " (only these kept)"
    return ", ".join(f"{step}: {score * 100:.2f}" for step, score in steps)


def same_numbers(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two runs of one cell agree to the bit on what both recorded: STS-B dev at step 0 and at
    the best step, the best step, and the seven STS scores."""
    train = ("dev_spearman_before", "best_dev_spearman", "best_step")
    return all(a["train"][k] == b["train"][k] for k in train) and all(
        a["scores"][t] == b["scores"][t] for t in STS_KEYS
    )


def run_row(label: str, cell: dict[str, Any]) -> str:
    train, recorded = cell["train"], cell.get("settings")
    threads = recorded["torch_threads"] if recorded else "unrecorded"
    return (
        f"| {label} | {threads} | {trajectory(cell)} | {train['best_step']} | "
        f"{train['best_dev_spearman'] * 100:.2f} | {cell['scores']['avg_all']:.2f} |"
    )


def equal_runs(runs: list[dict[str, Any]]) -> str:
    """Whether the re-runs agree to the last bit, and where not, by how much."""
    first = runs[0]
    if len(runs) < 2:
        return "only one re-run so far: nothing to compare it with"
    keys = [("dev trajectory", lambda c: c["train"].get("dev_spearman_by_step"))]
    keys += [("best step", lambda c: c["train"]["best_step"])]
    keys += [(task, lambda c, t=task: c["scores"][t]) for task in STS_KEYS]
    differing = [name for name, value in keys if any(value(c) != value(first) for c in runs[1:])]
    if not differing:
        return "**exactly equal** (every STS-B dev score, the best step and the seven STS scores, to the bit)"
    gap = max(abs(c["scores"]["avg_all"] - first["scores"]["avg_all"]) for c in runs[1:])
    return f"**not equal**: {', '.join(differing)} differ; 7-task average by up to {gap:.4f}"


def seed_spread(path: Path, row: str) -> float | None:
    """The standard deviation of the 7-task average over the committed seeds of the cell's pooler."""
    seeds = cellfiles.load_cells(path.parent).get(row, [])
    return statistics.stdev(c["scores"]["avg_all"] for c in seeds) if len(seeds) > 1 else None


def against_committed(grid: Grid, run: dict[str, Any]) -> str:
    """A re-run's 7-task average against the committed cell's, judged by the pooler's seed spread."""
    backbone, regime, row, seed = run["backbone"], run["regime"], run["pooler"], run["seed"]
    path = grid.cell_file(backbone, regime, row, seed)
    if not path.is_file():
        return "no committed cell to compare with."
    cell = cellfiles.read(path)
    spread = seed_spread(path, row)
    delta = run["scores"]["avg_all"] - cell["scores"]["avg_all"]
    if spread is None:
        verdict = "one seed: spread unknown"
    else:
        verdict = f"{'within' if abs(delta) <= spread else '**outside**'} `{row}`'s seed spread, {spread:.2f}"
    if cell.get("settings"):
        differing = ", ".join(differences([cell["settings"], run["settings"]])) or "none"
        settings = f"settings recorded; differing from the re-run's: {differing}"
    else:
        settings = "settings unrecorded"
    if same_numbers(run, cell):
        equal = "**equal to the bit** (step-0 and best STS-B dev, best step, the seven STS scores)"
    else:
        before = (
            "equal"
            if run["train"]["dev_spearman_before"] == cell["train"]["dev_spearman_before"]
            else (
                f"{(run['train']['dev_spearman_before'] - cell['train']['dev_spearman_before']) * 100:+.4f}"
            )
        )
        equal = f"**not equal** (step-0 STS-B dev × 100: {before})"
    return (
        f"the committed cell ({settings}) has 7-task average {cell['scores']['avg_all']:.2f} "
        f"and best step {cell['train']['best_step']}; the first re-run {run['scores']['avg_all']:.2f} "
        f"({delta:+.2f}, {verdict}) and best step {run['train']['best_step']}: {equal}."
    )


def unrecorded_line(grid: Grid, backbones: list[str]) -> str:
    counted = [
        c
        for backbone in backbones
        for regime in REGIMES
        for runs in cellfiles.load_cells(grid.cells_dir(backbone) / regime).values()
        for c in runs
    ]
    missing = sum(not c.get("settings") for c in counted)
    if not missing:
        return ""
    return (
        f"{missing} of the {len(counted)} cells in this report were made before cells recorded their "
        "settings: they are *unrecorded*, not counted as differing from anything."
    )


def rerun_section(grid: Grid, backbones: list[str]) -> list[str]:
    records = rerun_records(grid.results)
    unrecorded = unrecorded_line(grid, backbones)
    if not records and not unrecorded:
        return []
    lines = [
        "## What a re-run reproduces",
        "",
        "Each new cell records what its numbers depend on besides its config (`settings`: "
        + ", ".join(f"`{key}`" for key in COMPARED)
        + ", with the platform and commit); a grid whose cells differ in one of these is flagged in its "
        "section.",
    ]
    lines += [unrecorded, ""] if unrecorded else [""]
    for name, runs in records.items():
        first = runs[0]
        recorded = first["settings"]
        same = differences([r["settings"] for r in runs])
        tasks = "the 7 STS tasks only" if first.get("eval_tasks") == "sts" else "every task"
        setup = (
            f"{recorded['torch_threads']} torch thread(s), {recorded['train_precision']} training, "
            f"{recorded['device']} ({recorded['cpu']}), torch {recorded['torch']}, evaluated on {tasks}"
        )
        lines += [
            f"{name}, {first['regime']} `{first['pooler']}` seed {first['seed']}: {len(runs)} re-runs "
            f"(`{RERUN_COMMAND}`), {setup}"
            + (f"; settings differ between the re-runs: {same}" if same else ", identical settings")
            + ".",
            "",
            "| run | threads | STS-B dev × 100 by step | best step | best dev | Avg. (all), 7 STS |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        path = grid.cell_file(first["backbone"], first["regime"], first["pooler"], first["seed"])
        if path.is_file():
            lines.append(run_row("committed cell", cellfiles.read(path)))
        lines += [run_row(f"re-run {i}", run) for i, run in enumerate(runs, start=1)]
        lines += [
            "",
            f"- The re-runs against each other: {equal_runs(runs)}.",
            f"- Against the committed cell: {against_committed(grid, first)}",
            "",
        ]
    return [*lines, *in_short(grid, records)]


def in_short(grid: Grid, records: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The answer in one paragraph, from the verdicts above."""
    between, committed = [], []
    for name, runs in records.items():
        first = runs[0]
        if len(runs) > 1:
            exact = all(
                same_numbers(r, first)
                and r["train"].get("dev_spearman_by_step") == first["train"].get("dev_spearman_by_step")
                for r in runs[1:]
            )
            between.append(f"{'exactly' if exact else '**not exactly**'} on {name}")
        path = grid.cell_file(first["backbone"], first["regime"], first["pooler"], first["seed"])
        if not path.is_file():
            continue
        cell = cellfiles.read(path)
        spread = seed_spread(path, first["pooler"])
        delta = first["scores"]["avg_all"] - cell["scores"]["avg_all"]
        if same_numbers(first, cell):
            committed.append(f"to the bit on {name}")
        elif spread is not None:
            where = "within" if abs(delta) <= spread else "**outside**"
            committed.append(f"{where} the seed spread on {name} ({delta:+.2f} against {spread:.2f})")
    lines = []
    if between:
        lines.append(
            "In short: with identical recorded settings, a re-run reproduced its cell "
            + "; ".join(between)
            + " (every STS-B dev score, the best step and the seven STS scores)."
        )
    if committed:
        lines.append(
            "The committed cells, made with unrecorded settings, were reproduced "
            + "; ".join(committed)
            + " (7-task average against the pooler's seed standard deviation)."
        )
    return [*lines, ""] if lines else []
