"""Which budget a plain (MLM-only) backbone's pooler grid gets: issue 26 asks that plain SimCSE clearly
gain over the untouched backbone at the grid's budget, and that the budget be raised for every pooler
alike if it does not.

    python benchmarks/budget_probe.py --backbone benchmarks/backbones/bert-mlm-4l256

The budgets are tried in this order, fixed before the backbone they are for existed, so the choice cannot
follow the answer:

- `grid`: the other backbones' budget, the shipped `compare/*-minilm` configs as they are;
- `lr`: learning rate 3e-4 for both regimes (ELECTRA-Small's fine-tuning rate: a small encoder trained
  from scratch barely moves in 100-200 steps at the 2e-5 / 3e-5 made for bert-base);
- `long`: lr 3e-4 and more training: unsupervised 1,000 steps (64,000 sentences, 5x), supervised 3 epochs
  (297 steps, the LWAP paper's epochs).

Each budget trains `cls` (plain SimCSE) and `mean`, seed 0, evaluated on the seven STS tasks, beside the
backbone's untouched rows (mean, last [CLS], first-last average; every task). A regime takes the first
budget whose trained `cls` beats every untouched row on Avg. (all) by at least MARGIN points; if none does,
the last one, and the table says so. Cells go to benchmarks/results/compare/budget/NAME/ (tracked), with a
README.md table; models to runs/budget/ (not tracked). A rerun skips the finished cells.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from lwap.compare.cells import read
from lwap.compare.grid import UNTOUCHED_POOLINGS, Grid, backbone_name

REPO = Path(__file__).resolve().parents[1]
MARGIN = 2.0  # Avg. (all) points: "clearly" above every untouched row
BUDGETS: dict[str, dict[str, list[str]]] = {
    "grid": {"unsup": [], "sup": []},
    "lr": {"unsup": ["training.learning_rate=3e-4"], "sup": ["training.learning_rate=3e-4"]},
    "long": {
        "unsup": ["training.learning_rate=3e-4", "data.max_examples=64000"],
        "sup": ["training.learning_rate=3e-4", "training.epochs=3"],
    },
}


def run_budget(backbone: str, regime: str, label: str, results: Path, work: Path, untouched: bool) -> None:
    command = [sys.executable, "-m", "lwap", "compare", "run", "--results", str(results / label)]
    command += ["--work-dir", str(work / label), "--backbone", backbone, "--regime", regime]
    command += ["--seeds", "0", "--poolers", "cls", "mean", "--tasks", "sts"]
    command += [a for o in BUDGETS[label][regime] for a in ("--set", o)]
    subprocess.run(command + ([] if untouched else ["--no-untouched"]), check=True, cwd=REPO)


def depth_settings(backbone: Path) -> list[str]:
    """`weighted` pools the top half of the layers, as its default start (4) does on the 6-layer backbones
    (layers 4-6); on a 4-layer one that start would leave the last layer alone, i.e. its plain [CLS]."""
    layers = json.loads((backbone / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"]
    start = layers - layers // 2 + 1
    return [] if start == 4 else [f"model.weighted_layer_start={start}"]


def probe(backbone: str, results: Path, work: Path) -> tuple[list[str], dict[str, tuple[str, bool]]]:
    """Run the budgets in order per regime until one passes; the table rows and each regime's choice
    (the budget, and whether it passed: if none did, the last)."""
    reference = Grid(results / "grid", work / "grid")  # untouched rows: measured once, with the first budget
    rows, chosen = [], {}
    for regime in ("unsup", "sup"):
        for i, label in enumerate(BUDGETS):
            run_budget(backbone, regime, label, results, work, untouched=(regime, i) == ("unsup", 0))
            before = {
                p: read(reference.reference_file(backbone, p))["scores"]["avg_all"]
                for p in UNTOUCHED_POOLINGS
            }
            grid = Grid(results / label, work / label)
            trained = {
                p: read(grid.cell_file(backbone, regime, p, 0))["scores"]["avg_all"] for p in ("cls", "mean")
            }
            passed = all(trained["cls"] - b >= MARGIN for b in before.values())
            overrides = (
                ", ".join(f"`{o}`" for o in BUDGETS[label][regime]) or "none (the configs as they are)"
            )
            rows.append(
                f"| {regime} | `{label}` | {overrides} | {trained['cls']:.2f} | {trained['mean']:.2f} | "
                f"{'**yes**' if passed else 'no'} |"
            )
            if passed or i == len(BUDGETS) - 1:
                chosen[regime] = (label, passed)
                break
    header = ", ".join(f"`{p}` {v:.2f}" for p, v in before.items())
    return [
        f"Untouched rows, Avg. (all): {header}.",
        "",
        "| regime | budget | --set | trained `cls` | trained `mean` | `cls` ≥ every untouched row + 2 |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
    ], chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backbone", required=True, help="a plain encoder folder (no sentence-transformers modules)"
    )
    a = parser.parse_args(argv)
    name = backbone_name(a.backbone)
    results, work = REPO / "benchmarks/results/compare/budget" / name, REPO / "runs/budget" / name
    table, chosen = probe(a.backbone, results, work)
    choice = []
    for regime, (label, passed) in chosen.items():
        sets = " ".join(f"--set {o}" for o in [*BUDGETS[label][regime], *depth_settings(Path(a.backbone))])
        verdict = "" if passed else " (no budget passed: the largest tried)"
        choice += [
            f"- {regime}: `{label}`{verdict}:",
            "",
            f"      python benchmarks/compare_poolers.py run "
            f"--regime {regime} --backbone {a.backbone} {sets}".rstrip(),
            "",
        ]
    text = [
        f"# Budget probe: {name}",
        "",
        f"Made by `python benchmarks/budget_probe.py --backbone {a.backbone}` "
        "(the rule: its docstring). Seed 0, STS tasks only; STS Spearman × 100.",
        "",
        *table,
        "",
        "Chosen, and the grid's command (the same `--set` for every pooler and seed):",
        "",
        *choice,
        "",
    ]
    (results / "README.md").write_text("\n".join(text), encoding="utf-8")
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
