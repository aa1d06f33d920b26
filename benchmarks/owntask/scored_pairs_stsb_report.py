"""The report of issue 67's scored pairs case (scored_pairs_stsb.py), as docs/COMPARE.md pre-registers it
("Pre-registered: scored pairs, STS-B train → test (issue 67)"), from the cell files alone.

Each contrast A − B is paired by seed (same data order) and read from its 95 % t-interval with the four
words of issue 66 (compare/intervals.py: equivalent, above, below, undecided) at a margin of 0.5
points, on STS-B test (the primary metric) and on Avg. (all) (what specialising costs). Each row against
the untouched backbone is the same interval with the backbone's one score on every seed.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from lwap.compare.intervals import interval_text, paired_interval, phrase

MARGIN = 0.5  # points of Spearman × 100, as issue 66's Avg. (all) margin
LEVEL = 0.95
ROW_WORDS = {
    "st-cosent": "sentence-transformers' training_stsbenchmark, CoSENTLoss",
    "lwap-mean": "lwap train, scored_pairs (CoSENT), mean pooling",
    "lwap-lwap": "lwap train, scored_pairs (CoSENT), lwap pooling, native start",
    "thresholded": "lwap train, sup_simcse on the pairs scored ≥ 4, mean pooling",
}
CONTRASTS = (  # pre-registered, in this order
    ("lwap-mean", "st-cosent", "lwap's trainer against sentence-transformers' own, same head"),
    ("lwap-lwap", "st-cosent", "LWAP's native start against the example"),
    ("lwap-lwap", "lwap-mean", "LWAP's head against the backbone's own"),
    ("lwap-mean", "thresholded", "the scores against thresholding them"),
)
METRICS = (("stsb_test", "STS-B test"), ("avg_all", "Avg. (all)"))


def read_cells(results: Path) -> dict[tuple[str, int | None], dict[str, Any]]:
    cells = {}
    for path in sorted((results / "cells").glob("*.json")):
        cell = json.loads(path.read_text(encoding="utf-8"))
        cells[(cell["row"], cell["seed"])] = cell
    return cells


def metric(cell: dict[str, Any], name: str) -> float | None:
    return cell.get(name) if name == "stsb_test" else cell["sts"].get(name)


def values(cells: dict, row: str, seeds: tuple[int, ...], name: str) -> list[float] | None:
    """The row's metric seed by seed; None until every seed's cell exists (or when it was not measured)."""
    found = [metric(cells[(row, s)], name) if (row, s) in cells else None for s in seeds]
    return None if any(v is None for v in found) else found  # type: ignore[return-value]


def contrast_line(a: list[float], b: list[float], label: str) -> str:
    interval = paired_interval(a, b, LEVEL)
    wins = sum(x > y for x, y in zip(a, b, strict=True))
    return (
        f"| {label} | {interval.mean:+.2f} | {interval_text(interval)} | {wins}/{len(a)} | "
        f"**{phrase(interval, MARGIN)}** |"
    )


def write_report(results: Path, seeds: tuple[int, ...]) -> str:
    """REPORT.md in `results`, from its cells; returns its text."""
    cells = read_cells(results)
    untouched = cells.get(("untouched", None))
    lines = [
        "# Scored pairs, STS-B train → test (issue 67)",
        "",
        "Written by `python benchmarks/owntask/scored_pairs_stsb.py report` from the cell files; the plan is "
        'docs/COMPARE.md, "Pre-registered: scored pairs, STS-B train → test (issue 67)". Cosine Spearman '
        f"× 100; mean ± sd over seeds {', '.join(map(str, seeds))}; {_budget(cells)}.",
        "",
        "| row | " + " | ".join(label for _, label in METRICS) + " |",
        "| --- | " + " | ".join("---:" for _ in METRICS) + " |",
    ]
    if untouched:
        shown = [metric(untouched, name) for name, _ in METRICS]
        lines.append("| untouched all-MiniLM-L6-v2 | " + " | ".join(_num(v) for v in shown) + " |")
    for row, words in ROW_WORDS.items():
        cols = []
        for name, _ in METRICS:
            v = values(cells, row, seeds, name)
            cols.append(f"{statistics.fmean(v):.2f} ± {statistics.stdev(v):.2f}" if v else "not run yet")
        lines.append(f"| `{row}`: {words} | " + " | ".join(cols) + " |")
    for name, label in METRICS:
        lines += ["", f"**{label}**, paired by seed, {LEVEL:.0%} intervals, margin {MARGIN} points:", ""]
        lines += ["| contrast | mean | interval | seeds A > B | word |", "| --- | ---: | --- | ---: | --- |"]
        for a, b, what in CONTRASTS:
            va, vb = values(cells, a, seeds, name), values(cells, b, seeds, name)
            label_ab = f"`{a}` − `{b}` ({what})"
            lines.append(
                contrast_line(va, vb, label_ab) if va and vb else f"| {label_ab} | | not run yet | | |"
            )
        base = metric(untouched, name) if untouched else None
        for row in ROW_WORDS:
            v = values(cells, row, seeds, name)
            label_row = f"`{row}` − untouched"
            if v and base is not None:
                lines.append(contrast_line(v, [base] * len(v), label_row))
    text = "\n".join(lines) + "\n"
    (results / "REPORT.md").write_text(text, encoding="utf-8")
    return text


def _budget(cells: dict[tuple[str, int | None], dict[str, Any]]) -> str:
    """The trained cells' epochs (the amendment of 2026-12-07 made them 1; a cell before it has no key)."""
    epochs = sorted({c.get("epochs", 4) for c in cells.values() if c["row"] != "untouched"})
    if not epochs:
        return "nothing trained yet"
    return "trained " + " and ".join(f"{e} epoch{'s' * (e != 1)}" for e in epochs)


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"
