"""After a failed gate: the control and the diagnoses beside lwap's trained cells, read by the rule
pre-registered in docs/COMPARE.md ("Diagnosis if the gate fails").

    python benchmarks/backbone/gate_diagnosis.py --backbone benchmarks/backbones/bert-prenorm-4l256-sentences

Reads what the gate and its control left (docs/PRETRAIN.md says how they were run): the gate's untouched
rows and its first budget's unsupervised cells (`budget/NAME/long/`), the plain loop's scores
(`budget/NAME/plain-simcse/POOLING/`, `budget/NAME/diagnosis/LABEL/POOLING/`, each `lwap eval --tasks
sts`) and each plain run's record (`runs/...`, its STS-B dev curve), which it copies beside the scores so
that the table can be remade from the repository alone. Writes `budget/NAME/DIAGNOSIS.md` and prints it.
Runs not finished yet are rows that say so.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO
from benchmarks.backbone.budget_probe import GATE_BUDGETS, GATE_MARGINS
from benchmarks.grid.study import UNTOUCHED
from lwap.compare.cells import read, scores
from lwap.compare.grid import Grid, backbone_name

GATE_BUDGET = next(iter(GATE_BUDGETS))  # the gate's first budget, the one the control repeats
MARGIN = GATE_MARGINS["unsup"]  # the control repeats the gate's unsupervised cells
# (label, what it changes): the control, then each diagnosis in the order docs/COMPARE.md pre-registers
PLAIN_RUNS = (
    ("plain-simcse", "the control: the same recipe, plain PyTorch"),
    ("diagnosis/lr3e-5", "lr 3e-5 (SimCSE's bert-base rate)"),
    ("diagnosis/dropout0.05", "dropout 0.05 (hidden and attention)"),
)


def dev_summary(curve: list[list[float]], best_step: int | None) -> str:
    """STS-B dev × 100 at step 0, at the kept step, at the last step."""
    by_step = {int(step): score for step, score in curve}
    last = max(by_step)
    kept = by_step.get(best_step) if best_step is not None else None
    kept_text = f"{100 * kept:.1f} (step {best_step})" if kept is not None else "—"
    return f"{100 * by_step[0]:.1f} → {kept_text}; {100 * by_step[last]:.1f} at {last}"


def plain_row(results: Path, runs: Path, label: str, pooling: str, name: str) -> dict[str, Any] | None:
    folder = results / label / pooling
    record_file = folder / "plain_simcse.json"
    run_record = runs / label / name / pooling / "plain_simcse.json"
    if run_record.is_file() and not record_file.is_file() and folder.is_dir():
        shutil.copyfile(run_record, record_file)  # the curve, kept beside the scores (no weights)
    if not (folder / "results.json").is_file() or not record_file.is_file():
        return None
    record = json.loads(record_file.read_text(encoding="utf-8"))
    return {
        "avg_all": scores(read(folder / "results.json"))["avg_all"],
        "dev": dev_summary(record["dev_curve"], record["best_step"]),
    }


def lwap_row(grid: Grid, backbone: str, pooling: str) -> dict[str, Any] | None:
    path = grid.cell_file(backbone, "unsup", pooling, 0)
    if not path.is_file():
        return None
    cell = read(path)
    train = cell["train"]
    return {
        "avg_all": cell["scores"]["avg_all"],
        "dev": dev_summary(train["dev_spearman_by_step"], train["best_step"]),
    }


def diagnosis(backbone: str, repo: Path = REPO) -> str:
    name = backbone_name(backbone)
    results = repo / "benchmarks/results/compare/budget" / name
    grid = Grid(results / GATE_BUDGET, repo / "runs/budget" / name / GATE_BUDGET)
    untouched = {p: read(grid.reference_file(backbone, p))["scores"]["avg_all"] for p in UNTOUCHED}
    bar = max(untouched.values()) + MARGIN
    runs = [
        (
            "lwap's trainer (the gate's `long` cells)",
            {p: lwap_row(grid, backbone, p) for p in ("cls", "mean")},
        )
    ]
    for label, words in PLAIN_RUNS:
        runs.append((words, {p: plain_row(results, repo / "runs", label, p, name) for p in ("cls", "mean")}))
    lines = [
        f"# The gate's diagnosis: {name}",
        "",
        f"Made by `python benchmarks/backbone/gate_diagnosis.py --backbone {backbone}`; the plan and how it",
        'is read: docs/COMPARE.md, "Diagnosis if the gate fails". Unsupervised SimCSE, seed 0, the gate\'s',
        "first budget (lr 3e-4, 64,000 Wikipedia sentences, batch 64, length 32, bf16) unless the row says",
        "what it changes; the plain rows are `benchmarks/backbone/plain_simcse.py` (nothing from lwap's",
        "trainer). Avg. (all): the seven STS tasks, Spearman × 100; STS-B dev × 100 at step 0 → the kept",
        "step; at the last step.",
        "",
        "Untouched rows, Avg. (all): "
        + ", ".join(f"`{p}` {v:.2f}" for p, v in untouched.items())
        + f"; the bar (every untouched row + {MARGIN:g}): **{bar:.2f}**.",
        "",
        "| run | `cls` Avg. (all) | `cls` STS-B dev | `mean` Avg. (all) | `mean` STS-B dev | both clear it |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for words, rows in runs:
        verdict = CLEARS_WORDS[clears(rows, bar)]
        lines.append(f"| {words} | {' | '.join(row_cells(rows, ('cls', 'mean')))} | {verdict} |")
    return "\n".join([*lines, *experiments_reading(results)]) + "\n"


CLEARS_WORDS = {True: "**yes**", False: "no", None: "—"}  # a table's "both clear it" column


def row_cells(rows: dict[str, dict[str, Any] | None], keys: tuple[str, ...]) -> list[str]:
    """Each pooler's Avg. (all) and STS-B dev curve, or "not run yet"."""
    cells = []
    for key in keys:
        row = rows[key]
        cells += [f"{row['avg_all']:.2f}", row["dev"]] if row else ["not run yet", "—"]
    return cells


def clears(rows: dict[str, dict[str, Any] | None], bar: float | None) -> bool | None:
    """The gate's rule: both poolers at or above `bar`; None until both are measured and the bar known."""
    if bar is None or not all(rows.values()):
        return None
    return all(row["avg_all"] >= bar for row in rows.values() if row)


def experiments_reading(results: Path) -> list[str]:
    """Issue 50's two causes tested by experiment (unsup_experiments.py, which imports this module: its
    report is read as text): the reading its EXPERIMENTS.md states, with a link to the numbers."""
    report = results / "experiments" / "EXPERIMENTS.md"
    if not report.is_file():
        return []
    heading = "## The reading, as pre-registered"
    text = report.read_text(encoding="utf-8")
    reading = text.split(heading, 1)[1].strip() if heading in text else "(no reading in the report yet)"
    return [
        "",
        "## The two untested causes, tested (issue 50)",
        "",
        "Dropout adaptation and unseen sentences, pre-registered in docs/COMPARE.md (\"The paper's claims",
        'measured fairly", item 4); the numbers: [experiments/EXPERIMENTS.md](experiments/EXPERIMENTS.md)',
        "(`python benchmarks/backbone/unsup_experiments.py report`).",
        "",
        reading,
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", required=True, help="the gate's backbone folder")
    a = parser.parse_args(argv)
    text = diagnosis(a.backbone)
    out = REPO / "benchmarks/results/compare/budget" / backbone_name(a.backbone) / "DIAGNOSIS.md"
    out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
