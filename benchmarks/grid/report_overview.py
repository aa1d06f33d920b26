"""The paper's question across every backbone in one table: does `lwap` beat SimCSE's baseline, under
SimCSE's aggregation, the paper's, and on retrieval. Each section below answers it for one grid; this puts
the answers side by side so no reader has to collect them. Further tables ask the same of `lwap` against
`cls` without its MLP, a fixed average of the levels LWAP reads, and the best mean-based pooler of each
grid. Each verdict is read by the seed spread and, paired by seed with Holm's correction over the table
(issue 50), a second time; the last section lists where the two differ."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from benchmarks.grid.report_decomposition import best_mean_based
from benchmarks.grid.study import ROWS, paper_baseline
from lwap.compare.cells import load_cells
from lwap.compare.grid import REGIME_WORDS, REGIMES, Grid, backbone_name
from lwap.compare.paired import holm, p_text, paired, word
from lwap.compare.verdicts import HEADLINE, gap, spread_word

Cells = dict[str, list[dict[str, Any]]]
Grids = list[tuple[str, str, Cells]]  # (backbone, regime, its cells), each grid loaded once


class Reading(NamedTuple):
    """One cell of an overview table, and the seed-spread and paired verdicts it shows."""

    text: str
    spread: str | None  # above / below / level; None with one seed or no cells
    paired: str | None


def verdict_cell(
    cells: Cells, key: str, other_row: str, adjusted: float | None, base_row: str = "lwap"
) -> Reading:
    """The seed-spread reading (Welch's p), then the paired one (Holm-adjusted over the table)."""
    base, other = ([c["scores"][key] for c in cells[p] if key in c["scores"]] for p in (base_row, other_row))
    if not base or not other:
        return Reading("—", None, None)
    g = gap(base, other)
    if g.larger is None:
        return Reading(f"{g.delta:+.2f} (one seed)", None, None)
    spread, pair = spread_word(g), word(g.delta, adjusted)
    welch = "< 0.01" if g.p < 0.01 else f"= {g.p:.2f}"
    text = f"{g.delta:+.2f}: {bold(spread)} (p {welch}); paired {bold(pair)} (Holm p {p_text(adjusted)})"
    return Reading(text, spread, pair)


def bold(verdict: str) -> str:
    return verdict if verdict == "level" else f"**{verdict}**"


def load_grids(grid: Grid, found: list[str]) -> Grids:
    return [(b, r, load_cells(grid.cells_dir(b) / r, ROWS.order)) for b in found for r in REGIMES]


def rows_against(
    grids: Grids, pick: Callable[[Cells], str | None], base: str = "lwap"
) -> tuple[list[str], list[str]]:
    """One row per backbone × regime whose grid has `base` and the row `pick(cells)` names; the paired
    differences of the whole table are one family for Holm's correction (issue 50). Also each cell whose
    paired verdict differs from the seed-spread one, in words."""
    chosen = [(b, r, cells, pick(cells)) for b, r, cells in grids]
    chosen = [(b, r, cells, other) for b, r, cells, other in chosen if base in cells and other in cells]
    found = [paired(cells[base], cells[other], key) for _, _, cells, other in chosen for key, _ in HEADLINE]
    adjusted = iter(holm([d.p if d else None for d in found]))
    rows, changes = [], []
    for backbone, regime, cells, other in chosen:
        seeds = f"{len(cells[base])}/{len(cells[other])}"
        readings = [(label, verdict_cell(cells, key, other, next(adjusted), base)) for key, label in HEADLINE]
        scores = " | ".join(reading.text for _, reading in readings)
        where = f"{backbone_name(backbone)} {REGIME_WORDS[regime]}"
        rows.append(
            f"| {backbone_name(backbone)} | {REGIME_WORDS[regime]} | `{other}` | {seeds} | {scores} |"
        )
        changes += [
            f"{where}, `{base}` − `{other}`, {label}: {r.spread} → {r.paired}"
            for label, r in readings
            if r.spread is not None and r.spread != r.paired
        ]
    return rows, changes


def table(title: str, words: list[str], rows: list[str], base: str = "lwap") -> list[str]:
    if not rows:
        return []
    columns = " | ".join(label for _, label in HEADLINE)
    return [
        title,
        "",
        *words,
        "",
        f"| backbone | regime | against | seeds ({base}/other) | {columns} |",
        "|" + " --- |" * (4 + len(HEADLINE)),
        *rows,
        "",
    ]


# (title, words under it, the row each grid is read against), in the order the report shows them
TABLES: list[tuple[str, list[str], Callable[[Cells], str | None]]] = [
    (
        "## Does `lwap` beat the paper's baseline? Every backbone",
        [
            "`lwap` − SimCSE's own baseline, mean over seeds (× 100): `cls-mlp` (the MLP kept at",
            "inference, as supervised SimCSE) where the grid has it, else `cls` (unsupervised SimCSE's).",
            "Read two ways: **above** / **below** where the gap exceeds the two seed standard deviations",
            "summed, else level, p from Welch's t-test; then paired by seed, above / below where the",
            "paired t-test's p, Holm-adjusted over this table, is < 0.05 (issue 50). Each backbone's",
            "section below has the cells, the other poolers and the budget.",
        ],
        paper_baseline,
    ),
    (
        "## Does `lwap` beat `cls` without the MLP? Every backbone",
        [
            "`lwap` − `cls` (SimCSE's MLP dropped at inference, as the grids' `cls` row), read as the",
            "table above (Holm over this table).",
        ],
        lambda cells: "cls",
    ),
    (
        "## Does `lwap` beat a fixed average of the same levels? Every backbone",
        [
            "`lwap` − `all_levels_avg` (every level LWAP reads, equal fixed weights: no learned",
            "attention, no head), read as the tables above (issue 50). Why it wins or collapses where it",
            "does, from the untouched backbones' levels scored one by one: [LEVEL_MEANS.md](LEVEL_MEANS.md).",
        ],
        lambda cells: "all_levels_avg",
    ),
    (
        "## Does `lwap` beat the best mean-based pooler? Every backbone",
        [
            "`lwap` − the best of `mean`, `first_last_avg` and `last2_avg` on Avg. (all) in each grid",
            "(named in the row), read as the tables above.",
        ],
        best_mean_based,
    ),
]


def overview_tables(grids: Grids) -> list[str]:
    """The overview tables (`lwap` against the paper's baseline, `cls` without its MLP, the fixed
    all-levels mean, the best mean-based pooler), then which of their verdicts the paired reading moves."""
    lines, changed = [], []
    for title, words, pick in TABLES:
        rows, changes = rows_against(grids, pick)
        lines += table(title, words, rows)
        changed += [f"- {title.removeprefix('## ')}: {change}." for change in changes] if rows else []
    if not lines:
        return []
    summary = [
        "## What the paired reading changes",
        "",
        "Every verdict of the tables above whose paired, Holm-corrected reading (pre-registered in",
        "[COMPARE.md](COMPARE.md), issue 50) differs from the seed-spread rule the earlier reports used;",
        "each grid's own list of differences below marks its changes the same way.",
        "",
        *(changed or ["None."]),
        "",
    ]
    return [*lines, *summary]
