"""Which frontier cells ran on another setup, from each cell's recorded `settings` (CPU, threads, precision,
libraries: `lwap.compare.settings.COMPARED`) and its training summary (a run resumed from a checkpoint).
REPORT.md names those cells in their grid's section and marks each paired reading whose two cells differ
at some seed (`lwap.compare.settings.crossing`, as docs/RESULTS.md does for the grids), so a reader sees
where a difference may hold some of the setups' own."""

from __future__ import annotations

from collections import Counter
from typing import Any

from lwap.compare.settings import COMPARED, crossing

Cells = dict[str, dict[int, dict[str, Any]]]  # row -> seed -> cell, as frontier_report loads them
CROSSED = "†"


def setup_of(cell: dict[str, Any]) -> tuple[str, ...]:
    settings = cell.get("settings") or {}
    return tuple(str(settings.get(key)) for key in COMPARED)


def setups_lines(cells: Cells) -> list[str]:
    """A grid's cells made on a setup other than most of its cells' (with what differs), and those that
    resumed (their training time is the last run's part only); nothing where every cell shares one setup
    and none resumed."""
    every = [(row, seed, cell) for row, seeds in cells.items() for seed, cell in sorted(seeds.items())]
    if not every:
        return []
    common = Counter(setup_of(cell) for *_, cell in every).most_common(1)[0][0]
    other, resumed = [], []
    for row, seed, cell in every:
        found = setup_of(cell)
        differs = [
            f"{key} {ours}" for key, ours, usual in zip(COMPARED, found, common, strict=True) if ours != usual
        ]
        if differs:
            other.append(f"`{row}` seed {seed} ({', '.join(differs)})")
        if (cell.get("train") or {}).get("resumed_from"):
            resumed.append(f"`{row}` seed {seed}")
    if not other and not resumed:
        return []
    usual = dict(zip(COMPARED, common, strict=True))
    parts = []
    if other:
        parts.append(
            f"{len(other)} of {len(every)} cells ran on another setup than the other "
            f"{len(every) - len(other)} (those: cpu {usual['cpu']}, {usual['torch_threads']} threads, "
            f"transformers {usual['transformers']}): {', '.join(other)}"
        )
    if resumed:
        parts.append(f"{len(resumed)} resumed from a checkpoint after a stop: {', '.join(resumed)}")
    return [
        f"**Setups** (the cells' recorded `settings`): {'; '.join(parts)}. A paired reading whose two cells "
        f"differ in setup at some seed (or one of them resumed) carries {CROSSED}.",
        "",
    ]


def crossed(cells: Cells, rows: tuple[str, str]) -> list[str]:
    """How the two rows' cells at one seed differ in setup (empty: one setup at every seed)."""
    first, second = ([{**cell, "seed": seed} for seed, cell in cells.get(row, {}).items()] for row in rows)
    return crossing(first, second)


def crossed_note(reasons: dict[str, list[str]]) -> list[str]:
    """The footnote under a table: each pair of rows marked, and how its cells differ."""
    found = {pair: why for pair, why in reasons.items() if why}
    if not found:
        return []
    listed = "; ".join(f"{pair}: {', '.join(why)}" for pair, why in found.items())
    return [
        f"{CROSSED} Cells of the two rows made on different setups at the same seed: {listed}. The "
        "difference may hold some of the setups' own.",
        "",
    ]
