"""The budget test's report (benchmarks/grid/verdict_report.py) read from hand-made cells laid out as
verdict_cells.sh leaves them: pending contrasts, the four words and Holm's p once all 10 seeds are in,
the still-rising flag, and the bootstrap over STS test pairs from each cell's `.pairs.npz`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.grid import verdict_report as budget
from lwap.compare.cells import write
from lwap.eval.sts_data import load_sts_task


def write_cell(
    results: Path, folder: str, row: str, seed: int, avg: float, scifact: float, curve: list
) -> None:
    cells = results / folder / "backbones" / budget.BACKBONE / "sup"
    pairs = cells / f"{row}-seed{seed}.pairs.npz"
    cells.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    cosines = {}
    for name in budget.STS_TASKS:  # cosines that follow the gold scores more closely for a higher avg
        for subset, task_pairs in load_sts_task(name, "senteval").subsets.items():
            gold = np.asarray(task_pairs.scores, dtype=np.float64)
            cosines[f"{name}/{subset}"] = (gold * avg / 100 + rng.normal(0, 1, len(gold))).astype(np.float32)
    np.savez_compressed(pairs, **cosines)
    train = {"best_step": max(curve)[0], "best_dev_spearman": max(v for _, v in curve), "steps": curve[-1][0]}
    scores = {"avg_all": avg, "scifact_ndcg@10": scifact}
    cell = {"pooler": row, "seed": seed, "commit": "abc1234567", "scores": scores,
            "train": {**train, "dev_spearman_by_step": curve}, "pair_scores": pairs.name}  # fmt: skip
    write(cells / f"{row}-seed{seed}.json", cell)


RISING = [[0, 0.5], [99, 0.6], [198, 0.65], [297, 0.68]]  # +3 points over the last epoch
FLAT = [[0, 0.5], [99, 0.7], [198, 0.74], [297, 0.741]]


@pytest.mark.usefixtures("data_mirror")
def test_the_budget_report_reads_the_pre_registered_family(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(budget, "BOOTSTRAP", 200)
    results = tmp_path / "verdicts"
    for seed in range(10):
        jitter = 0.01 * seed
        write_cell(results, "budget-3ep", "lwap", seed, 60.0 + jitter, 10.0 + jitter, RISING)
        write_cell(results, "budget-3ep", "first_last_avg", seed, 62.0, 14.0, FLAT)  # lwap 2 below
        write_cell(results, "budget-3ep", "cls-mlp", seed, 60.1 - jitter, 10.0 - (-1) ** seed * 5, RISING)
    write_cell(results, "budget-10ep", "lwap", 0, 61.0, 12.0, FLAT)  # one seed only: pending
    text = budget.report(results)
    primary = text.split("## The primary family")[1].split("##")[0].splitlines()
    row = {tuple(line.split(" | ")[:3]): line for line in primary if line.startswith("| budget-3ep")}
    fla, cls = "`lwap` − `first_last_avg`", "`lwap` − `cls-mlp`"
    avg, scifact = "Avg. (all) (margin 0.5)", "SciFact nDCG@10 (margin 1)"
    assert "| -1.95 | 0.03 | 0/10 |" in row["| budget-3ep", fla, avg]
    assert row["| budget-3ep", fla, avg].endswith("| **below by more than the margin** |")
    assert "**equivalent**" in row["| budget-3ep", cls, avg]  # −0.1 + 0.02 s: inside ±0.5
    assert "**undecided**" in row["| budget-3ep", cls, scifact]  # ±5 alternating: too wide
    long = [line for line in primary if line.startswith("| budget-10ep")]
    assert len(long) == 4 and all("pending: 0 of 10 seeds" in line for line in long)  # first_last_avg: none
    assert "The long budget's cells are not all in: no reading yet." in text
    rows = {line.split(" | ")[1]: line for line in text.splitlines() if line.startswith("| budget-3ep | `")}
    assert rows["`lwap`"].endswith("| +3.00 | **yes** |") and rows["`first_last_avg`"].endswith("| no |")
    bootstrap = [line for line in text.splitlines() if line.startswith("| budget-3ep | `lwap` − `first")][-1]
    low, high = (float(x) for x in bootstrap.split("[")[1].rstrip(" |]").split(", "))
    assert low < high  # the test pairs' own noise, around the observed difference of the pair scores
    # docs/RESULTS.md's section: the same primary table, the family's level and the cells counted (31)
    section = "\n".join(budget.results_section(results, "BUDGET.md"))
    assert "8 tests, one family (intervals at 99.375 %, Holm's p beside). 31 of 100 cells in." in section
    assert row["| budget-3ep", fla, avg] in section and "[BUDGET.md](BUDGET.md)" in section
    assert "Every other comparison in this page is secondary (COMPARE.md)" in section
