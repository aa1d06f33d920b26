"""Differences paired by seed, read in the four words of docs/COMPARE.md, with Holm's p beside.

Every row of a grid trains on the same data order for a given seed, so the seeds pair the cells: two rows
are compared seed by seed (d_s = a_s − b_s), not as two independent samples. A comparison's word comes
from the 95 % t-interval of mean d and the score's margin (`lwap.compare.intervals`): it depends on the two
rows' cells alone, so every table that shows a comparison gives it the same word. A table reads many
differences at once, so the table that decides them shows Holm's step-down p over its list beside the
words: scipy offers the false discovery rate (`false_discovery_control`), not Holm's family-wise control,
and statsmodels' `multipletests` is not worth a dependency for ten lines.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, NamedTuple

from lwap.compare.intervals import Interval, interval_text, margin_of, paired_interval, paired_p, phrase

LEVEL = 0.95  # a grid comparison's interval (pre-registered: 95 %, Holm within the deciding table beside)


class Paired(NamedTuple):
    """`a` − `b` over the seeds both rows have."""

    delta: float  # the mean of d_s
    sd: float  # the standard deviation of d_s (0.0 with one seed)
    n: int  # seeds both rows have
    agree: int  # seeds whose d_s has the mean's sign
    p: float | None  # two-sided paired t-test; None with fewer than two seeds
    interval: Interval | None  # the t-interval of mean d at LEVEL; None with fewer than two seeds


def seed_pairs(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], key: str
) -> tuple[list[float], list[float]]:
    """Score `key` of rows `a` and `b` at each seed both have (and both scored), in seed order."""
    first = {c["seed"]: c["scores"][key] for c in a if key in c["scores"]}
    second = {c["seed"]: c["scores"][key] for c in b if key in c["scores"]}
    seeds = sorted(first.keys() & second.keys())
    return [first[s] for s in seeds], [second[s] for s in seeds]


def paired_values(first: Sequence[float], second: Sequence[float], level: float = LEVEL) -> Paired | None:
    """first[i] − second[i] read as a paired difference; None when there is no pair."""
    if not first:
        return None
    d = [x - y for x, y in zip(first, second, strict=True)]
    delta = statistics.fmean(d)
    sd = statistics.stdev(d) if len(d) > 1 else 0.0
    agree = sum(1 for x in d if x * delta > 0)
    if len(d) < 2:
        return Paired(delta, sd, len(d), agree, None, None)
    return Paired(delta, sd, len(d), agree, paired_p(first, second), paired_interval(first, second, level))


def paired(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], key: str, level: float = LEVEL
) -> Paired | None:
    """Row `a`'s cells against row `b`'s on score `key`, paired by seed; None when they share no seed."""
    return paired_values(*seed_pairs(a, b, key), level)


def verdict(d: Paired | None, key: str) -> str | None:
    """The comparison's word (`phrase`: "below by more than the margin" where it is), with `key`'s margin;
    None under two seeds (no interval)."""
    if d is None or d.interval is None:
        return None
    return phrase(d.interval, margin_of(key))


def shown(d: Paired | None, key: str, mark: str = "") -> str:
    """`+0.30 [+0.24, +0.36]: **equivalent**` (a word found is bold, undecided is not); `mark` after the
    word (a footnote's sign)."""
    if d is None:
        return "—"
    found = verdict(d, key)
    if found is None:
        return f"{d.delta:+.2f} (one seed)"
    return f"{d.delta:+.2f} {interval_text(d.interval)}: {word_text(found, mark)}"


def word_text(found: str, mark: str = "") -> str:
    """A word as the tables show it: bold where it says something (undecided is not), then `mark`."""
    return (found if found == "undecided" else f"**{found}**") + mark


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p values, in the order given (None stays None and does not count in the family)."""
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (len(present) - rank) * p))
        adjusted[i] = running
    return adjusted


def p_text(p: float | None) -> str:
    if p is None:
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"
