"""Which budget a plain (MLM-only) backbone's pooler grid gets: issue 26 asks that plain SimCSE clearly
gain over the untouched backbone at the grid's budget, and that the budget be raised for every pooler
alike if it does not.

    python benchmarks/backbone/budget_probe.py --backbone benchmarks/backbones/bert-mlm-4l256

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
README.md table and choice.json (each regime's budget, whether it passed, its `--set`s); models to
runs/budget/ (not tracked). A rerun skips the finished cells.

`--rule gate` is issue 36's gate for a backbone that has learned language, written down (GATE_BUDGETS,
GATE_MARGINS) before that backbone existed: SimCSE's jump must show before any grid is run on it. Both
trained `cls` and trained `mean` must beat every untouched row on Avg. (all) by at least 5 points
unsupervised and 10 supervised (SimCSE's bert-base clears its untouched first-last row by 36 and 44). The
budgets, in this order: `long` (the grid budget of bert-mlm-4l256); `lr1e-4` (a third of that rate, the
same training: SimCSE's bert-base rate is 3e-5, and a backbone that has learned language may need a
gentler one than a plateaued one); `lr1e-4-long` (that rate, unsupervised 3,000 steps (192,000
sentences), supervised 6 epochs). The first that passes is the grid's budget; if none passes, the gate
fails, the table says so, and no grid runs until the cause (backbone or trainer) is found.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO
from benchmarks.grid.study import UNTOUCHED
from lwap.compare.cells import read
from lwap.compare.grid import Grid, backbone_name

MARGIN = 2.0  # Avg. (all) points: "clearly" above every untouched row
BUDGETS: dict[str, dict[str, list[str]]] = {
    "grid": {"unsup": [], "sup": []},
    "lr": {"unsup": ["training.learning_rate=3e-4"], "sup": ["training.learning_rate=3e-4"]},
    "long": {
        "unsup": ["training.learning_rate=3e-4", "data.max_examples=64000"],
        "sup": ["training.learning_rate=3e-4", "training.epochs=3"],
    },
}


GATE_BUDGETS: dict[str, dict[str, list[str]]] = {
    "long": BUDGETS["long"],
    "lr1e-4": {
        "unsup": ["training.learning_rate=1e-4", "data.max_examples=64000"],
        "sup": ["training.learning_rate=1e-4", "training.epochs=3"],
    },
    "lr1e-4-long": {
        "unsup": ["training.learning_rate=1e-4", "data.max_examples=192000"],
        "sup": ["training.learning_rate=1e-4", "training.epochs=6"],
    },
}
GATE_MARGINS = {"unsup": 5.0, "sup": 10.0}


class Rule(NamedTuple):
    """Budgets in the order they are tried, the margin over every untouched row per regime, and which
    trained poolers must clear it."""

    budgets: dict[str, dict[str, list[str]]]
    margins: dict[str, float]
    must_pass: tuple[str, ...]


RULES = {
    "probe": Rule(BUDGETS, {"unsup": MARGIN, "sup": MARGIN}, ("cls",)),
    "gate": Rule(GATE_BUDGETS, GATE_MARGINS, ("cls", "mean")),
}


def run_budget(
    backbone: str, regime: str, label: str, results: Path, work: Path, untouched: bool, rule: Rule
) -> None:
    command = [sys.executable, "-m", "lwap", "compare", "run", "--results", str(results / label)]
    command += ["--work-dir", str(work / label), "--backbone", backbone, "--regime", regime]
    command += ["--seeds", "0", "--poolers", "cls", "mean", "--tasks", "sts"]
    command += [a for o in rule.budgets[label][regime] for a in ("--set", o)]
    subprocess.run(command + ([] if untouched else ["--no-untouched"]), check=True, cwd=REPO)


def depth_settings(backbone: Path) -> list[str]:
    """`weighted` pools the top half of the layers, as its default start (4) does on the 6-layer backbones
    (layers 4-6); on a 4-layer one that start would leave the last layer alone, i.e. its plain [CLS]."""
    layers = json.loads((backbone / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"]
    start = layers - layers // 2 + 1
    return [] if start == 4 else [f"model.weighted_layer_start={start}"]


def probe(
    backbone: str, results: Path, work: Path, rule: Rule = RULES["probe"]
) -> tuple[list[str], dict[str, tuple[str, bool]]]:
    """Run the budgets in order per regime until one passes; the table rows and each regime's choice
    (the budget, and whether it passed: if none did, the last)."""
    first = next(iter(rule.budgets))  # the untouched rows: measured once, with the first budget
    reference = Grid(results / first, work / first)
    rows, chosen = [], {}
    for regime in ("unsup", "sup"):
        for i, label in enumerate(rule.budgets):
            run_budget(backbone, regime, label, results, work, (regime, i) == ("unsup", 0), rule)
            untouched = {p: read(reference.reference_file(backbone, p))["scores"] for p in UNTOUCHED}
            before = {p: scores["avg_all"] for p, scores in untouched.items()}
            grid = Grid(results / label, work / label)
            trained = {
                p: read(grid.cell_file(backbone, regime, p, 0))["scores"]["avg_all"] for p in ("cls", "mean")
            }
            passed = all(
                trained[p] - b >= rule.margins[regime] for p in rule.must_pass for b in before.values()
            )
            overrides = (
                ", ".join(f"`{o}`" for o in rule.budgets[label][regime]) or "none (the configs as they are)"
            )
            rows.append(
                f"| {regime} | `{label}` | {overrides} | {trained['cls']:.2f} | {trained['mean']:.2f} | "
                f"{'**yes**' if passed else 'no'} |"
            )
            if passed or i == len(rule.budgets) - 1:
                chosen[regime] = (label, passed)
                break
    header = ", ".join(f"`{p}` {v:.2f}" for p, v in before.items())
    scifact = {p: scores.get("scifact_ndcg@10") for p, scores in untouched.items()}  # not part of the rule
    retrieval = ", ".join(f"`{p}` {v:.2f}" for p, v in scifact.items())
    margins = " / ".join(f"{m:g} ({r})" for r, m in rule.margins.items())
    bar = " and ".join(f"`{p}`" for p in rule.must_pass) + f" ≥ every untouched row + {margins}"
    return [
        f"Untouched rows, Avg. (all): {header}.",
        *(
            [f"Untouched rows, SciFact nDCG@10 (not part of the rule): {retrieval}."]
            if None not in scifact
            else []
        ),
        "",
        f"| regime | budget | --set | trained `cls` | trained `mean` | {bar} |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
    ], chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backbone", required=True, help="a plain encoder folder (no sentence-transformers modules)"
    )
    parser.add_argument("--rule", choices=RULES, default="probe", help="issue 26's probe or issue 36's gate")
    a = parser.parse_args(argv)
    name, rule = backbone_name(a.backbone), RULES[a.rule]
    results, work = REPO / "benchmarks/results/compare/budget" / name, REPO / "runs/budget" / name
    table, chosen = probe(a.backbone, results, work, rule)
    choice, record = [], {"rule": a.rule, "backbone": a.backbone, "regimes": {}}
    for regime, (label, passed) in chosen.items():
        overrides = [*rule.budgets[label][regime], *depth_settings(Path(a.backbone))]
        record["regimes"][regime] = {"budget": label, "passed": passed, "set": overrides}
        sets = " ".join(f"--set {o}" for o in overrides)
        verdict = "" if passed else " (no budget passed: the largest tried)"
        if not passed and a.rule == "gate":
            verdict = " (**the gate fails**: no budget passed; find the cause before any grid)"
        choice += [
            f"- {regime}: `{label}`{verdict}:",
            "",
            f"      python benchmarks/grid/compare_poolers.py run "
            f"--regime {regime} --backbone {a.backbone} {sets}".rstrip(),
            "",
        ]
    text = [
        f"# Budget probe: {name}",
        "",
        f"Made by `python benchmarks/backbone/budget_probe.py --backbone {a.backbone} --rule {a.rule}` "
        "(the rule: its docstring). Seed 0, STS tasks only; STS Spearman × 100.",
        "",
        *table,
        "",
        "Chosen, and the grid's command (the same `--set` for every pooler and seed):",
        "",
        *choice,
        "",
    ]
    results.mkdir(parents=True, exist_ok=True)
    (results / "README.md").write_text("\n".join(text), encoding="utf-8")
    # Each regime's budget, whether it passed and its `--set`s: what the grid runs with (or no grid).
    (results / "choice.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
