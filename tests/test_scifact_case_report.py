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
    row = "| mean | dev folder − STS-B dev, none negatives | 1.00 ± 0.50 | beyond the seed spread (+) |"
    assert row in text
    assert "-0.30 ± 0.10 | beyond the seed spread (−) |" in text  # what it costs on STS, every seed
    assert "6 runs of 36 planned (the grid runs seed by seed)" in text
    assert "The 6 runs made so far, as they measured themselves (medians): training 2.0 min" in text
