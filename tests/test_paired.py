"""Differences paired by seed, their words and Holm's correction (lwap.compare.paired), against computations
by hand."""

from __future__ import annotations

import math

import pytest

from lwap.compare.paired import holm, paired, shown, verdict


def cells(scores: dict[int, float], key: str = "avg_all") -> list[dict]:
    return [{"seed": seed, "scores": {key: value}} for seed, value in scores.items()]


def test_paired_difference_is_taken_seed_by_seed() -> None:
    a = cells({0: 11.0, 1: 12.0, 2: 13.0, 3: 99.0})  # seed 3 has no partner: left out
    b = cells({0: 10.0, 1: 10.0, 2: 10.0})
    d = paired(a, b, "avg_all")
    assert (d.delta, d.sd, d.n, d.agree) == (2.0, 1.0, 3, 3)
    t = 2.0 / (1.0 / math.sqrt(3))  # mean / (sd / √n), 2 degrees of freedom
    p = 1 - t / math.sqrt(2 + t * t)  # two-sided p of Student's t with ν = 2, in closed form
    assert d.p == pytest.approx(p)


def test_paired_edge_cases() -> None:
    assert paired(cells({0: 1.0}), cells({1: 1.0}), "avg_all") is None  # no seed in common
    one = paired(cells({0: 3.0}), cells({0: 1.0}), "avg_all")
    assert (one.delta, one.n, one.p) == (2.0, 1, None)  # one pair: no test
    same = paired(cells({0: 3.0, 1: 4.0}), cells({0: 1.0, 1: 2.0}), "avg_all")
    assert (same.sd, same.p) == (0.0, 0.0)  # every seed moved by exactly the same amount
    assert paired(cells({0: 1.0, 1: 2.0}), cells({0: 1.0, 1: 2.0}), "avg_all").p == 1.0


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 → × 3, × 2, × 1 = 0.03, 0.06, 0.04 → running maximum 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06], nan_ok=False)
    assert holm([0.5, 0.9]) == [1.0, 1.0]  # capped at 1
    assert holm([]) == []


def test_the_word_reads_the_95_percent_interval_with_the_scores_margin() -> None:
    """d = 1, 2, 3: the interval [-0.48, +4.48] holds 0 (undecided); d = 0.30, 0.32, 0.28: [+0.25, +0.35]
    excludes 0 but lies inside ±0.5, and equivalent is checked first; d = 2.0, 2.1, 1.9 on SciFact (margin
    1.0): [+1.75, +2.25], above, and its mirror below by more than the margin; one seed has no interval and
    no word."""
    wide = paired(cells({0: 11.0, 1: 12.0, 2: 13.0}), cells({0: 10.0, 1: 10.0, 2: 10.0}), "avg_all")
    assert verdict(wide, "avg_all") == "undecided"
    assert shown(wide, "avg_all") == "+2.00 [-0.48, +4.48]: undecided"
    narrow = paired(cells({0: 0.30, 1: 0.32, 2: 0.28}), cells({0: 0.0, 1: 0.0, 2: 0.0}), "avg_all")
    assert verdict(narrow, "avg_all") == "equivalent"
    sci = [{"seed": s, "scores": {"scifact_ndcg@10": v}} for s, v in enumerate((2.0, 2.1, 1.9))]
    zero = [{"seed": s, "scores": {"scifact_ndcg@10": 0.0}} for s in range(3)]
    assert verdict(paired(sci, zero, "scifact_ndcg@10"), "scifact_ndcg@10") == "above"
    below = paired(zero, sci, "scifact_ndcg@10")
    assert shown(below, "scifact_ndcg@10", "†").endswith(": **below by more than the margin**†")
    one = paired(cells({0: 3.0}), cells({0: 1.0}), "avg_all")
    assert verdict(one, "avg_all") is None and shown(one, "avg_all") == "+2.00 (one seed)"
