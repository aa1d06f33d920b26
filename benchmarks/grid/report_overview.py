"""The paper's question across every backbone in one table: does `lwap` beat `cls` by more than the seed
spread, under SimCSE's aggregation, the paper's, and on retrieval. Each section below answers it for one
grid; this puts the answers side by side so no reader has to collect them. A second table asks the same
of `lwap` against the best mean-based pooler of each grid, the comparison `lwap`'s mean keys invite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.grid.report_decomposition import best_mean_based
from lwap.compare.cells import load_cells
from lwap.compare.grid import REGIME_WORDS, REGIMES, Grid, backbone_name
from lwap.compare.verdicts import HEADLINE, gap

Cells = dict[str, list[dict[str, Any]]]
Grids = list[tuple[str, str, Cells]]  # (backbone, regime, its cells), each grid loaded once


def verdict_cell(cells: Cells, key: str, other_row: str = "cls") -> str:
    base, other = ([c["scores"][key] for c in cells[p] if key in c["scores"]] for p in ("lwap", other_row))
    if not base or not other:
        return "—"
    g = gap(base, other)
    if g.larger is None:
        return f"{g.delta:+.2f} (one seed)"
    word = ("**above**" if g.delta > 0 else "**below**") if g.larger else "level"
    return f"{g.delta:+.2f}: {word} (p {'< 0.01' if g.p < 0.01 else f'= {g.p:.2f}'})"


def load_grids(grid: Grid, found: list[str]) -> Grids:
    return [(b, r, load_cells(grid.cells_dir(b) / r)) for b in found for r in REGIMES]


def rows_against(grids: Grids, pick: Callable[[Cells], str | None]) -> list[str]:
    """One row per backbone × regime whose grid has `lwap` and the row `pick(cells)` names."""
    rows = []
    for backbone, regime, cells in grids:
        other = pick(cells)
        if "lwap" in cells and other in cells:
            seeds = f"{len(cells['lwap'])}/{len(cells[other])}"
            scores = " | ".join(verdict_cell(cells, key, other) for key, _ in HEADLINE)
            row = f"| {backbone_name(backbone)} | {REGIME_WORDS[regime]} | `{other}` | {seeds} | {scores} |"
            rows.append(row)
    return rows


def table(title: str, words: list[str], rows: list[str]) -> list[str]:
    if not rows:
        return []
    columns = " | ".join(label for _, label in HEADLINE)
    return [
        title,
        "",
        *words,
        "",
        f"| backbone | regime | against | seeds (lwap/other) | {columns} |",
        "|" + " --- |" * (4 + len(HEADLINE)),
        *rows,
        "",
    ]


def overview_tables(grid: Grid, found: list[str]) -> list[str]:
    """Both overview tables: `lwap` against `cls`, then against the best mean-based pooler."""
    grids = load_grids(grid, found)
    return [
        *table(
            "## Does `lwap` beat `cls`? Every backbone",
            [
                "`lwap` − `cls`, mean over seeds (× 100); **above** / **below** where the gap exceeds the",
                "two seed standard deviations summed, else level; p from Welch's t-test. Each backbone's",
                "section below has the cells, the other poolers and the budget.",
            ],
            rows_against(grids, lambda cells: "cls"),
        ),
        *table(
            "## Does `lwap` beat the best mean-based pooler? Every backbone",
            [
                "`lwap` − the best of `mean`, `first_last_avg` and `last2_avg` on Avg. (all) in each grid",
                "(named in the row), read as the table above.",
            ],
            rows_against(grids, best_mean_based),
        ),
    ]
