"""Confidence intervals and the four words of the pre-registration in docs/COMPARE.md ("Pre-registered:
verdicts with power"), shared by every report that reads a contrast that way: the grids' report (its
comparisons at 95 %, `lwap.compare.paired`) and the repository's benchmark reports.

A contrast A − B is read from the t-interval of its mean difference: paired by seed when the two share a
data order (`paired_interval`: the same seed, the same batches), Welch's when they do not
(`welch_interval`: two loops, two orders). The interval's level is the family's: 1 − 0.05/k for k tests
read together (Bonferroni), 95 % for one. `word` turns an interval into one of four words with a margin
(the smallest difference that matters: `margin_of`), in the pre-registered order of checks. The intervals are
scipy's (`ttest_rel` / `ttest_ind(equal_var=False)`, `.confidence_interval`); only the degenerate cases
scipy answers with NaN or a precision warning (every difference the same, to rounding) are decided here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import NamedTuple

WORDS = ("equivalent", "above", "below", "undecided")
# The smallest difference that matters, in the score's points: 0.5 for an average of STS Spearman × 100
# (Avg. (all), and Avg. (wmean) on the same scale), 1.0 for a retrieval score × 100 (nDCG@10 and the like).
STS_MARGIN = 0.5
RETRIEVAL_MARGIN = 1.0


class Interval(NamedTuple):
    """The mean difference A − B and its two-sided t-interval at `level`."""

    mean: float
    low: float
    high: float
    level: float
    n: int  # pairs (paired) or the smaller sample (Welch)


def no_spread(values: Sequence[float]) -> bool:
    """All the same to rounding: scores read back from JSON differ by ~1e-14 where they are equal offsets
    (80.1 − 79.0 against 80.0 − 78.9), and scipy's t then warns of catastrophic cancellation."""
    return max(values) - min(values) <= 1e-9 * max(1.0, *(abs(v) for v in values))


def family_level(tests: int, alpha: float = 0.05) -> float:
    """The level at which `tests` intervals hold together with 1 − alpha confidence (Bonferroni)."""
    return 1 - alpha / tests


def paired_interval(a: Sequence[float], b: Sequence[float], level: float) -> Interval:
    """The paired t-interval of mean(a_s − b_s): n − 1 degrees of freedom, a[i] paired with b[i]."""
    from scipy.stats import ttest_rel

    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"a paired interval needs two or more pairs, got {len(a)} and {len(b)} values")
    d = [x - y for x, y in zip(a, b, strict=True)]
    mean = statistics.fmean(d)
    if no_spread(d):  # scipy's t is infinite or 0/0; the interval is the one value
        return Interval(mean, mean, mean, level, len(d))
    low, high = ttest_rel(a, b).confidence_interval(confidence_level=level)
    return Interval(mean, float(low), float(high), level, len(d))


def welch_interval(a: Sequence[float], b: Sequence[float], level: float) -> Interval:
    """Welch's t-interval of mean(a) − mean(b), unequal variances, Welch–Satterthwaite degrees of freedom."""
    from scipy.stats import ttest_ind

    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"Welch's interval needs two or more values a side, got {len(a)} and {len(b)}")
    mean = statistics.fmean(a) - statistics.fmean(b)
    if no_spread(a) and no_spread(b):  # degrees of freedom 0/0
        return Interval(mean, mean, mean, level, min(len(a), len(b)))
    low, high = ttest_ind(a, b, equal_var=False).confidence_interval(confidence_level=level)
    return Interval(mean, float(low), float(high), level, min(len(a), len(b)))


def margin_of(key: str) -> float:
    """The margin of a score key as cells name them: retrieval scores (`scifact_ndcg@10`: a `@` cut-off)
    take 1.0, STS averages and scores 0.5."""
    return RETRIEVAL_MARGIN if "@" in key else STS_MARGIN


def word(interval: Interval, margin: float) -> str:
    """The pre-registered four words, checked in this order: equivalent (the interval inside ±margin),
    above (its low end > 0), below (its high end < 0), else undecided."""
    if -margin < interval.low and interval.high < margin:
        return "equivalent"
    if interval.low > 0:
        return "above"
    if interval.high < 0:
        return "below"
    return "undecided"


def phrase(interval: Interval, margin: float) -> str:
    """`word`, with "below by more than the margin" where the whole interval lies under −margin."""
    found = word(interval, margin)
    return "below by more than the margin" if found == "below" and interval.high < -margin else found


def interval_text(interval: Interval, digits: int = 2) -> str:
    """[low, high] with signs, e.g. `[-0.48, +4.48]`."""
    return f"[{interval.low:+.{digits}f}, {interval.high:+.{digits}f}]"


def level_text(level: float) -> str:
    """A level as a percentage without trailing zeros: 0.9875 → `98.75 %`, 0.95 → `95 %`."""
    percent = f"{100 * level:.3f}".rstrip("0").rstrip(".")
    return f"{percent} %"


def paired_p(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided paired t-test's p (`ttest_rel`); with no spread in the differences, 0 when they
    are all the same non-zero amount and 1 when all are zero (where scipy's t is infinite or 0/0)."""
    from scipy.stats import ttest_rel

    d = [x - y for x, y in zip(a, b, strict=True)]
    if no_spread(d):
        return 0.0 if abs(statistics.fmean(d)) > 1e-9 else 1.0
    p = float(ttest_rel(a, b).pvalue)
    return p if math.isfinite(p) else 1.0
