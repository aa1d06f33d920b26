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


def test_a_pair_of_one_model_is_no_case_and_mined_negatives_get_the_sign_test() -> None:
    """`lwap`'s two selections kept the same weights (one hash) at every seed: dev − STS-B dev compares a
    model with itself and is not counted. Mined − none is also read over the independent training pairs
    (pooler × seed) by the sign test: 6 of 6 up, two-sided p = 2 × (1/2)^6 = 0.031; on STS 4 of 6, p =
    2 × (1 + 6 + 15)/64 = 0.688."""
    from benchmarks.owntask.case_reading import summary

    base = {"scifact": {"ndcg@10": 50.0}, "sts_average": 70.0}
    search = {  # (pooler, negatives, selection): SciFact at seed 0
        ("mean", "none", "dev"): 61.0, ("mean", "none", "stsb"): 60.0,
        ("mean", "mined", "dev"): 62.0, ("mean", "mined", "stsb"): 61.5,
        ("lwap", "none", "dev"): 55.0, ("lwap", "none", "stsb"): 55.0,
        ("lwap", "mined", "dev"): 55.5, ("lwap", "mined", "stsb"): 55.4,
    }  # fmt: skip
    runs = []
    for seed in range(3):
        for (pooler, negatives, selection), value in search.items():
            sts = 78.0 if negatives == "none" else (78.1, 78.1, 77.9)[seed]
            run = _run(pooler, negatives, selection, seed, value + seed, sts)
            one = pooler == "lwap" and negatives == "none"  # both selections kept the same step
            run["weights_sha256"] = f"{pooler}-{negatives}-{seed}" + ("" if one else f"-{selection}")
            runs.append(run)
    text = "\n".join(summary(runs, base, ("mean", "lwap"), ("none", "mined"), 3))
    assert (
        "instead of STS-B dev's, over the 3 pooler × setting pairs that kept different models (`lwap`, no "
        "negatives: the same model both ways at every seed): SciFact nDCG@10 +0.10 to +1.00" in text
    )
    assert "**Mined negatives** instead of none, over the 4 pooler × setting pairs:" in text
    assert "over the 6 independent training pairs (pooler × seed;" in text
    assert "dev folder's selection: SciFact 6 of 6 up, p = 0.031, STS avg. 4 of 6 up, p = 0.688" in text
    assert "STS-B dev's selection: SciFact 6 of 6 up, p = 0.031" in text
