"""The SciFact case's reading (benchmarks/owntask/scifact_case.py): paired by seed, a difference beyond the
seed spread only when every seed agrees on its sign, and the report's tables made from the run files."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.owntask import scifact_case as case


def _run(pooler: str, negatives: str, selection: str, seed: int, search: float, sts: float) -> dict:
    return {
        "name": case.run_name(pooler, negatives, selection, seed),
        "pooler": pooler,
        "negatives": negatives,
        "selection": selection,
        "seed": seed,
        "train": {"final_model_step": 44 if selection == "dev" else 20, "wall_seconds": 120.0},
        "scifact": {"ndcg@10": search},
        "sts_average": sts,
        "eval_seconds": 300.0,
        "eval_reused_from": None,
        "seconds": 420.0,
    }


def test_the_verdict_needs_every_seed_to_agree() -> None:
    assert case.verdict([0.5, 0.1, 0.9]) == "beyond the seed spread (+)"
    assert case.verdict([-0.5, -0.1, -0.9]) == "beyond the seed spread (−)"
    assert case.verdict([0.5, -0.1, 0.9]) == "within the seed spread"
    assert case.verdict([0.5]) == "too few seeds"


def test_the_report_pairs_runs_by_seed(tmp_path: Path) -> None:
    runs = []
    for seed, (dev, stsb) in enumerate([(66.0, 65.0), (67.0, 65.5), (66.5, 66.0)]):
        runs.append(_run("mean", "none", "dev", seed, dev, 78.0 - seed * 0.1))
        runs.append(_run("mean", "none", "stsb", seed, stsb, 78.2))
    folder = tmp_path / "results" / "runs"
    folder.mkdir(parents=True)
    for r in runs:
        (folder / f"{r['name']}.json").write_text(json.dumps(r), encoding="utf-8")
    c = case.Case(tmp_path / "work", smoke=False)
    c.results = tmp_path / "results"
    assert case.paired(runs, "mean", ("scifact",), ("none", "dev"), ("none", "stsb")) == [1.0, 1.5, 0.5]
    text = case.report_text(c)
    assert "| mean | none | dev folder | 3 | 44, 44, 44 | 66.50 ± 0.50 | 77.90 ± 0.10 |" in text
    assert "| mean | none | STS-B dev | 3 | 20, 20, 20 | 65.50 ± 0.50 | 78.20 ± 0.00 |" in text
    row = "| mean | dev folder − STS-B dev, no negatives | 1.00 ± 0.50 | beyond the seed spread (+) |"
    assert row in text
    assert "-0.30 ± 0.10 | beyond the seed spread (−) |" in text  # what it costs on STS, every seed
    assert "6 runs of 36 planned (the grid runs seed by seed)" in text
    assert "The 6 runs made so far, as they measured themselves (medians): training 2.0 min" in text


def test_what_it_shows_is_computed_from_the_runs() -> None:
    from benchmarks.owntask.case_reading import summary

    base = {"scifact": {"ndcg@10": 64.0}, "sts_average": 78.0}
    runs = []
    for seed in range(3):
        runs += [
            _run("mean", "none", "dev", seed, 66.0 + seed, 77.9),
            _run("mean", "none", "stsb", seed, 65.0 + seed, 78.1),
            _run("mean", "mined", "dev", seed, 68.0 + seed, 78.0),
            _run("mean", "mined", "stsb", seed, 66.0, 78.2),
            _run("lwap", "none", "dev", seed, 59.0, 74.0),
        ]
    text = "\n".join(summary(runs, base, ("mean", "lwap"), ("none", "mined"), 3))
    assert "Provisional" not in text
    assert (
        "`mean`, mined negatives, kept by the dev folder: SciFact nDCG@10 69.00 against the untouched" in text
    )
    assert "(+5.00); STS avg. 78.00 against 78.00 (+0.00)" in text
    # dev − stsb: none +1.00 every seed, mined +2, +3, +4 → 2 up; STS −0.2 both → 2 down
    assert "instead of STS-B dev's, over the 2 pooler × setting pairs: SciFact nDCG@10 +1.00 to +3.00" in text
    assert "(beyond the seed spread: 2 up, 0 down); STS avg. -0.20 to -0.20 (0 up, 2 down)" in text
    assert "`lwap` stays below the untouched backbone on both measures in every run" in text
    assert "`mean` stays below" not in text
    assert "_Provisional: 2 of 3 seeds" in "\n".join(summary(runs[:10], base, ("mean", "lwap"), ("none",), 3))
