"""The paper's question across every backbone in one table: does `lwap` beat `cls` by more than the seed
spread, under SimCSE's aggregation, the paper's, and on retrieval. Each section below answers it for one
grid; this puts the answers side by side so no reader has to collect them."""

from __future__ import annotations

from typing import Any

from lwap.compare.cells import load_cells
from lwap.compare.grid import REGIME_WORDS, REGIMES, Grid, backbone_name
from lwap.compare.verdicts import HEADLINE, gap


def verdict_cell(cells: dict[str, list[dict[str, Any]]], key: str) -> str:
    base, other = ([c["scores"][key] for c in cells[p] if key in c["scores"]] for p in ("lwap", "cls"))
    if not base or not other:
        return "—"
    g = gap(base, other)
    if g.larger is None:
        return f"{g.delta:+.2f} (one seed)"
    word = ("**above**" if g.delta > 0 else "**below**") if g.larger else "level"
    return f"{g.delta:+.2f}: {word} (p {'< 0.01' if g.p < 0.01 else f'= {g.p:.2f}'})"


def lwap_against_cls(grid: Grid, found: list[str]) -> list[str]:
    """One row per backbone × regime that has both `lwap` and `cls` cells."""
    rows = []
    for backbone in found:
        for regime in REGIMES:
            cells = load_cells(grid.cells_dir(backbone) / regime)
            if "lwap" in cells and "cls" in cells:
                seeds = f"{len(cells['lwap'])}/{len(cells['cls'])}"
                scores = " | ".join(verdict_cell(cells, key) for key, _ in HEADLINE)
                rows.append(f"| {backbone_name(backbone)} | {REGIME_WORDS[regime]} | {seeds} | {scores} |")
    if not rows:
        return []
    return [
        "## Does `lwap` beat `cls`? Every backbone",
        "",
        "`lwap` − `cls`, mean over seeds (× 100); **above** / **below** where the gap exceeds the two seed",
        "standard deviations summed, else level; p from Welch's t-test. Each backbone's section below has",
        "the cells, the other poolers and the budget.",
        "",
        "| backbone | regime | seeds (lwap/cls) | " + " | ".join(label for _, label in HEADLINE) + " |",
        "|" + " --- |" * (3 + len(HEADLINE)),
        *rows,
        "",
    ]
