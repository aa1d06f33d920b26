"""Differences paired by seed, with Holm's correction (pre-registered in docs/COMPARE.md).

Every row of a grid trains on the same data order for a given seed, so the seeds pair the cells: two rows
are compared seed by seed (d_s = a_s − b_s), not as two independent samples as Welch's test does. A table
reads many differences at once, so their p values are corrected together with Holm's step-down method:
scipy offers the false discovery rate (`false_discovery_control`), not Holm's family-wise control, and
statsmodels' `multipletests` is not worth a dependency for ten lines.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any, NamedTuple

LEVEL = 0.05  # the family-wise error rate a verdict is read at


class Paired(NamedTuple):
    """`a` − `b` over the seeds both rows have."""

    delta: float  # the mean of d_s
    sd: float  # the standard deviation of d_s (0.0 with one seed)
    n: int  # seeds both rows have
    agree: int  # seeds whose d_s has the mean's sign
    p: float | None  # two-sided paired t-test; None with fewer than two seeds


def paired(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], key: str) -> Paired | None:
    """Row `a`'s cells against row `b`'s on score `key`, paired by seed; None when they share no seed."""
    from scipy.stats import ttest_rel

    first = {c["seed"]: c["scores"][key] for c in a if key in c["scores"]}
    second = {c["seed"]: c["scores"][key] for c in b if key in c["scores"]}
    seeds = sorted(first.keys() & second.keys())
    if not seeds:
        return None
    d = [first[s] - second[s] for s in seeds]
    delta = statistics.fmean(d)
    sd = statistics.stdev(d) if len(d) > 1 else 0.0
    agree = sum(1 for x in d if x * delta > 0)
    p = None
    if len(d) > 1 and sd > 0:
        p = float(ttest_rel([first[s] for s in seeds], [second[s] for s in seeds]).pvalue)
        p = p if math.isfinite(p) else None
    elif len(d) > 1:  # every seed moved by exactly the same amount: t is infinite (or 0/0 when no move)
        p = 0.0 if delta != 0 else 1.0
    return Paired(delta, sd, len(d), agree, p)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p values, in the order given (None stays None and does not count in the family)."""
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (len(present) - rank) * p))
        adjusted[i] = running
    return adjusted


def word(delta: float, adjusted: float | None) -> str:
    """The paired verdict: above or below where the Holm-adjusted p is under LEVEL, else level."""
    if adjusted is None or adjusted >= LEVEL:
        return "level"
    return "above" if delta > 0 else "below"


def p_text(p: float | None) -> str:
    if p is None:
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"
