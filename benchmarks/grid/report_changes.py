"""What the four words change: the overview's comparisons whose verdict reads differently now than under
the paired reading RESULTS.md used before issue 66 (issue 50's: above / below where the paired t-test's
p, Holm-adjusted over the table it stood in, was < 0.05, else level). That reading gave one comparison one
verdict per table (its grid's table and each overview table were separate Holm families); it is kept here
only to say which verdicts move, never to decide one."""

from __future__ import annotations

from typing import Any

from benchmarks.grid.report_overview import Grids, Shown
from benchmarks.grid.study import ROWS
from lwap.compare.paired import holm, paired, shown, verdict

Cells = dict[str, list[dict[str, Any]]]
OLD_ALPHA = 0.05
OLD_GRID_KEYS = ("avg_all", "scifact_ndcg@10")  # the metrics a grid's table of differences read then
FOUND = ("above", "below", "below by more than the margin")


def old_word(delta: float, adjusted: float | None) -> str:
    """Issue 50's paired verdict: above or below where the Holm-adjusted p is under 0.05, else level."""
    if adjusted is None or adjusted >= OLD_ALPHA:
        return "level"
    return "above" if delta > 0 else "below"


def old_grid_words(cells: Cells) -> dict[tuple[str, str], str]:
    """The verdicts a grid's own table gave `lwap` − each row without `lwap`'s pooling then: Avg. (all) and
    SciFact nDCG@10, Holm over that table."""
    if "lwap" not in cells:
        return {}
    others = [row for row in cells if ROWS.pooling_of(row) != "lwap"]
    found = [((row, key), paired(cells["lwap"], cells[row], key)) for key in OLD_GRID_KEYS for row in others]
    adjusted = holm([d.p if d else None for _, d in found])
    return {where: old_word(d.delta, q) for (where, d), q in zip(found, adjusted, strict=True) if d}


def changes_section(every: list[tuple[str, Shown]], grids: Grids) -> list[str]:
    """The comparisons of the overview tables grouped by what the four words do to their old verdicts
    (each table's, and the grid table's where it read the metric)."""
    grid_words = {(b, r): old_grid_words(cells) for b, r, cells in grids}
    merged: dict[tuple[str, str, str, str], tuple[Shown, dict[str, list[str]]]] = {}
    for short, s in every:
        if s.paired is None or s.paired.interval is None:
            continue
        where = (s.backbone, s.regime, s.pair[1], s.key)
        if where not in merged:  # the grid's own table first, where it read the metric
            before = grid_words[(s.backbone, s.regime)].get((s.pair[1], s.key))
            merged[where] = (s, {} if before is None else {before: ["its grid"]})
        merged[where][1].setdefault(old_word(s.paired.delta, s.adjusted), []).append(short)
    groups: dict[str, list[str]] = {name: [] for name in GROUPS}
    renamed = 0
    for s, old in merged.values():
        new = verdict(s.paired, s.key)
        group = group_of(set(old), new)
        if group is None:
            renamed += new == "undecided"
            continue
        was = "; ".join(f"{word} ({', '.join(tables)})" for word, tables in old.items())
        groups[group].append(
            f"- {s.where}, `{s.pair[0]}` − `{s.pair[1]}`, {s.label}: {was} → {shown(s.paired, s.key)}."
        )
    lines = [
        "## What the four words change",
        "",
        "The comparisons of the tables above whose verdict reads differently in the four words than under",
        "the paired reading this page used before (pre-registered in [COMPARE.md](COMPARE.md), issue 50:",
        "above / below where the paired t-test's p, Holm-adjusted over the table it stood in, was < 0.05,",
        "else level). That reading gave a comparison one verdict per table it stood in (in parentheses:",
        "its grid's table, which read Avg. (all) and SciFact only, and the tables above by short name).",
        "",
    ]
    for name, items in groups.items():
        if items:
            lines += [f"{GROUPS[name]}:", "", *items, ""]
    lines += [
        f"The other {renamed} comparisons the paired reading called level throughout are undecided: what",
        "level meant at n = 3, now said as such. The rest keep their verdict.",
        "",
    ]
    return lines


GROUPS = {
    "split": "One comparison, two verdicts before (in different tables), one word now",
    "found": "Level before, a difference now (the 95 % interval excludes 0; Holm's p is in its grid's table)",
    "bounded": "Level before, equivalent now (the interval lies inside the margin)",
    "lost": "A difference before, none read now",
}


def group_of(old: set[str], new: str | None) -> str | None:
    """Which change a comparison's old verdicts (one per table) and new word make; None for none worth
    listing (the same verdict, or level now named undecided)."""
    if new is None:
        return None
    if len(old) > 1:
        return "split"
    (before,) = old
    if before == "level":
        return "found" if new in FOUND else "bounded" if new == "equivalent" else None
    return "lost" if new in ("equivalent", "undecided") else None
