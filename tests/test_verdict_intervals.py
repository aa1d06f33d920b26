"""lwap.compare.intervals, the statistics of issue 66's pre-registration: the paired and Welch t-intervals
against worked numbers, the family's level, the margins and the four words in their order of checks."""

from __future__ import annotations

import math

import pytest

from lwap.compare.intervals import (
    Interval,
    family_level,
    interval_text,
    level_text,
    margin_of,
    paired_interval,
    paired_p,
    phrase,
    welch_interval,
    word,
)


def test_the_paired_interval_of_one_two_three_is_the_textbook_one() -> None:
    """d = 1, 2, 3: mean 2, sd 1, n 3; t(0.975, 2 df) = 4.302653 (a t table): 2 ± 4.302653 / sqrt(3)."""
    found = paired_interval([11.0, 12.0, 13.0], [10.0, 10.0, 10.0], 0.95)
    assert found.mean == pytest.approx(2.0) and found.n == 3 and found.level == 0.95
    assert found.low == pytest.approx(2 - 4.302653 / math.sqrt(3), abs=1e-5)
    assert found.high == pytest.approx(2 + 4.302653 / math.sqrt(3), abs=1e-5)
    assert interval_text(found) == "[-0.48, +4.48]"


def test_a_wider_level_gives_a_wider_paired_interval() -> None:
    """At the seen-ness family's 98.75 %, t(0.99375, 2 df) = 8.860200: d = 3.0, 3.1, 2.9 (sd 0.1)."""
    found = paired_interval([53.0, 54.1, 54.9], [50.0, 51.0, 52.0], family_level(4))
    assert found.low == pytest.approx(3.0 - 8.860200 * 0.1 / math.sqrt(3), abs=1e-4)
    assert interval_text(found) == "[+2.49, +3.51]"


def test_welchs_interval_uses_the_welch_satterthwaite_degrees_of_freedom() -> None:
    """a = 1, 2, 3 (variance 1), b = 4, 6, 8 (variance 4): se = sqrt(1/3 + 4/3), df = (5/3)² / ((1/3)²/2 +
    (4/3)²/2) = 50/17; t(0.975, 50/17 df) = 3.2173 (from the t distribution at that df)."""
    from scipy.stats import t

    found = welch_interval([1.0, 2.0, 3.0], [4.0, 6.0, 8.0], 0.95)
    half = t.ppf(0.975, 50 / 17) * math.sqrt(5 / 3)
    assert half == pytest.approx(4.1554, abs=1e-4)
    assert (found.mean, found.low, found.high) == pytest.approx((-4.0, -4.0 - half, -4.0 + half))
    assert interval_text(found) == "[-8.16, +0.16]"


def test_no_spread_is_an_interval_of_one_point_and_too_few_values_are_refused() -> None:
    assert paired_interval([3.0, 4.0], [1.0, 2.0], 0.95)[:3] == (2.0, 2.0, 2.0)
    assert welch_interval([3.0, 3.0], [1.0, 1.0], 0.95)[:3] == (2.0, 2.0, 2.0)
    assert paired_p([3.0, 4.0], [1.0, 2.0]) == 0.0 and paired_p([1.0, 2.0], [1.0, 2.0]) == 1.0
    assert paired_p([11.0, 12.0, 13.0], [10.0, 10.0, 10.0]) == pytest.approx(0.07418, abs=1e-4)  # t = 3.464
    with pytest.raises(ValueError, match="two or more"):
        paired_interval([1.0], [0.0], 0.95)
    with pytest.raises(ValueError, match="two or more"):
        welch_interval([1.0, 2.0], [0.0], 0.95)


def test_the_family_level_is_bonferronis() -> None:
    assert family_level(8) == pytest.approx(0.99375) and family_level(4) == pytest.approx(0.9875)
    assert (level_text(family_level(8)), level_text(0.9875), level_text(0.95)) == (
        "99.375 %",
        "98.75 %",
        "95 %",
    )


@pytest.mark.parametrize(
    ("low", "high", "expected", "said"),
    [
        (0.1, 0.3, "equivalent", "equivalent"),  # above 0 too, but equivalent is checked first
        (-0.49, 0.49, "equivalent", "equivalent"),
        (-0.5, 0.2, "undecided", "undecided"),  # the margin itself is outside: -margin < low is strict
        (0.6, 1.4, "above", "above"),
        (0.2, 0.9, "above", "above"),  # above 0, not inside the margin
        (-0.7, -0.1, "below", "below"),
        (-1.4, -0.6, "below", "below by more than the margin"),
        (-0.2, 0.7, "undecided", "undecided"),
    ],
)
def test_the_four_words_in_their_order_of_checks(low: float, high: float, expected: str, said: str) -> None:
    interval = Interval((low + high) / 2, low, high, 0.95, 3)
    assert word(interval, 0.5) == expected and phrase(interval, 0.5) == said


def test_the_margins_are_the_pre_registered_ones() -> None:
    """0.5 point for an STS average (Avg. (wmean) on Avg. (all)'s scale), 1.0 for nDCG@10."""
    assert margin_of("avg_all") == margin_of("avg_wmean") == 0.5
    assert margin_of("scifact_ndcg@10") == 1.0


def test_differences_equal_to_rounding_have_no_spread() -> None:
    """80.1 − 79.0 and 80.2 − 79.1 differ by ~1e-14 in floating point: one value, not a tiny interval that
    scipy computes with a precision warning; its paired p is 0 (a difference every seed)."""
    a, b = [80.1, 80.2, 80.3], [79.0, 79.1, 79.2]
    interval = paired_interval(a, b, 0.95)
    assert interval.low == interval.high == interval.mean and math.isclose(interval.mean, 1.1)
    assert paired_p(a, b) == 0.0 and paired_p(a, a) == 1.0
