"""benchmarks/backbone/gate_diagnosis.py: the control and the diagnoses beside lwap's cells, against the
gate's bar (every untouched row + 5), remade from the repository alone once each run's record is copied in."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.backbone import gate_diagnosis
from lwap.compare.grid import STS_COLUMNS

BACKBONE = "benchmarks/backbones/bert-new"


def sts_results(score: float) -> dict:
    return {"sts": {task: {"score": score, "wmean": score} for task in STS_COLUMNS}}


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_the_table_reads_every_run_and_the_bar(tmp_path: Path) -> None:
    budget = tmp_path / "benchmarks/results/compare/budget/bert-new"
    cells = budget / "long/backbones/bert-new"
    for name, avg in [
        ("untouched-backbone", 46.0),
        ("untouched-cls", 38.0),
        ("untouched-first_last_avg", 47.0),
    ]:
        write(cells / f"{name}.json", {"scores": {"avg_all": avg}})
    curve = [[0, 0.5], [50, 0.55], [100, 0.45]]
    for pooling, avg in [("cls", 40.0), ("mean", 47.5)]:
        train = {"dev_spearman_by_step": curve, "best_step": 50}
        write(cells / "unsup" / f"{pooling}-seed0.json", {"scores": {"avg_all": avg}, "train": train})
    for pooling, avg in [("cls", 53.0), ("mean", 52.5)]:  # the lr diagnosis clears 47 + 5 with both
        write(budget / "diagnosis/lr3e-5" / pooling / "results.json", sts_results(avg))
        record = {"dev_curve": curve, "best_step": 100}
        write(tmp_path / "runs/diagnosis/lr3e-5/bert-new" / pooling / "plain_simcse.json", record)
    write(budget / "plain-simcse/cls/results.json", sts_results(41.0))  # its record not there yet

    text = gate_diagnosis.diagnosis(BACKBONE, tmp_path)
    assert "the bar (every untouched row + 5): **52.00**" in text
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert rows["| lwap's trainer (the gate's `long` cells)"].endswith(
        "| 40.00 | 50.0 → 55.0 (step 50); 45.0 at 100 | 47.50 | 50.0 → 55.0 (step 50); 45.0 at 100 | no |"
    )
    assert rows["| lr 3e-5 (SimCSE's bert-base rate)"].endswith(
        "| 52.50 | 50.0 → 45.0 (step 100); 45.0 at 100 | **yes** |"
    )
    assert "not run yet" in rows["| the control: the same recipe, plain PyTorch"]
    assert rows["| the control: the same recipe, plain PyTorch"].endswith("| — |")
    assert (budget / "diagnosis/lr3e-5/cls/plain_simcse.json").is_file()  # copied beside the scores

    # issue 50's experiments: DIAGNOSIS.md carries their pre-registered reading once they report one
    assert "## The two untested causes, tested" not in text
    reading = "- (a) Neither arm passes: dropout adaptation at this dose is not the cause."
    write(budget / "experiments/EXPERIMENTS.md", {})
    (budget / "experiments/EXPERIMENTS.md").write_text(
        f"# x\n\n| table |\n\n## The reading, as pre-registered\n\n{reading}\n", encoding="utf-8"
    )
    text = gate_diagnosis.diagnosis(BACKBONE, tmp_path)
    assert text.index("## The two untested causes, tested (issue 50)") > text.index("| lr 3e-5")
    assert text.rstrip().endswith(reading) and "[experiments/EXPERIMENTS.md]" in text
