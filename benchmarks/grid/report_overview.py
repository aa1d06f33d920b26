"""The paper's question across every backbone in one table: does `lwap` beat SimCSE's baseline, under
SimCSE's aggregation, the paper's, and on retrieval. Each section below answers it for one grid; this puts
the answers side by side so no reader has to collect them. Further tables ask the same of `lwap` against
`cls` without its MLP, a fixed average of the levels LWAP reads, and the best mean-based pooler of each
grid. Every comparison is read in the four words of docs/COMPARE.md (issue 66) and decided in its grid's
table of differences against `lwap`: these tables repeat its word and point there. What the words change
against the earlier, paired-and-Holm reading: report_changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from benchmarks.grid.report_decomposition import best_mean_based
from benchmarks.grid.study import ROWS, paper_baseline
from lwap.compare.cells import load_cells
from lwap.compare.grid import REGIME_WORDS, REGIMES, Grid, backbone_name
from lwap.compare.paired import Paired, holm, p_text, paired, shown
from lwap.compare.settings import crossing
from lwap.compare.verdicts import CROSSED, HEADLINE, crossed_note

Cells = dict[str, list[dict[str, Any]]]
Grids = list[tuple[str, str, Cells]]  # (backbone, regime, its cells), each grid loaded once
Link = Callable[[str, str], str]  # (backbone, regime) -> where a grid's comparisons are decided


class Shown(NamedTuple):
    """One comparison as a table shows it: the grid, the pair, the metric, the paired difference, and
    Holm's p over the table it is shown in (what the earlier reading judged it by)."""

    backbone: str
    regime: str
    pair: tuple[str, str]
    key: str
    label: str
    paired: Paired | None
    adjusted: float | None

    @property
    def where(self) -> str:
        return f"{backbone_name(self.backbone)} {REGIME_WORDS[self.regime]}"


class Table(NamedTuple):
    """An overview table's lines, the comparisons it shows, and the footnote on crossed setups."""

    rows: list[str]
    shown: list[Shown]
    crossed: dict[str, list[str]]


def load_grids(grid: Grid, found: list[str]) -> Grids:
    return [(b, r, load_cells(grid.cells_dir(b) / r, ROWS.order)) for b in found for r in REGIMES]


def rows_against(
    grids: Grids, pick: Callable[[Cells], str | None], link: Link | None, base: str = "lwap"
) -> Table:
    """One row per backbone × regime whose grid has `base` and the row `pick(cells)` names, each metric in
    its word (marked where the pair's cells cross setups). `link` names where each row's comparisons are
    decided (its grid's table); with None this table decides them, and shows Holm's p over it beside."""
    chosen = [(b, r, cells, pick(cells)) for b, r, cells in grids]
    chosen = [(b, r, cells, other) for b, r, cells, other in chosen if base in cells and other in cells]
    found = [
        (b, r, other, key, label, paired(cells[base], cells[other], key))
        for b, r, cells, other in chosen
        for key, label in HEADLINE
    ]
    adjusted = iter(holm([d.p if d else None for *_, d in found]))
    every = [
        Shown(b, r, (base, other), key, label, d, next(adjusted)) for b, r, other, key, label, d in found
    ]
    rows, crossed = [], {}
    for index, (backbone, regime, cells, other) in enumerate(chosen):
        ours = every[index * len(HEADLINE) : (index + 1) * len(HEADLINE)]
        reasons = crossing(cells[base], cells[other])
        if reasons:
            crossed[f"{ours[0].where} `{base}` − `{other}`"] = reasons
        mark = CROSSED if reasons else ""
        texts = [shown(s.paired, s.key, mark) for s in ours]
        if link is None:
            texts = [f"{text} (Holm p {p_text(s.adjusted)})" for text, s in zip(texts, ours, strict=True)]
        decided = [] if link is None else [link(backbone, regime)]
        seeds = f"{len(cells[base])}/{len(cells[other])}"
        name, words = backbone_name(backbone), REGIME_WORDS[regime]
        rows.append(f"| {' | '.join([name, words, f'`{other}`', seeds, *texts, *decided])} |")
    return Table(rows, every, crossed)


def table(title: str, words: list[str], found: Table, base: str = "lwap", decided: bool = True) -> list[str]:
    """A table's lines; `decided`: it has a column pointing to where each row's comparisons are decided."""
    if not found.rows:
        return []
    columns = [label for _, label in HEADLINE] + (["decided in"] if decided else [])
    note = crossed_note(found.crossed)
    return [
        title,
        "",
        *words,
        "",
        f"| backbone | regime | against | seeds ({base}/other) | {' | '.join(columns)} |",
        "|" + " --- |" * (4 + len(columns)),
        *found.rows,
        "",
        *([*note, ""] if note else []),
    ]


# (title, its short name, words under it, the row each grid is read against), in the order the report
# shows them
TABLES: list[tuple[str, str, list[str], Callable[[Cells], str | None]]] = [
    (
        "## Does `lwap` beat the paper's baseline? Every backbone",
        "the paper's baseline",
        [
            "`lwap` − SimCSE's own baseline, mean over seeds (× 100): `cls-mlp` (the MLP kept at",
            "inference, as supervised SimCSE) where the grid has it, else `cls` (unsupervised SimCSE's).",
            "Each difference with its 95 % interval, paired by seed, and its word (docs/COMPARE.md, issue",
            "66): **equivalent** inside ±margin (0.5 point of an STS average, 1.0 of nDCG@10), else",
            "**above** / **below** where the interval excludes 0, else undecided. Each is decided in its",
            "grid's table of differences against `lwap` (linked; Holm's p over that table is there);",
            "this table and the ones below repeat its word. Each backbone's section below has the cells,",
            "the other poolers and the budget.",
        ],
        paper_baseline,
    ),
    (
        "## Does `lwap` beat `cls` without the MLP? Every backbone",
        "`cls` without the MLP",
        [
            "`lwap` − `cls` (SimCSE's MLP dropped at inference, as the grids' `cls` row), read as the",
            "table above.",
        ],
        lambda cells: "cls",
    ),
    (
        "## Does `lwap` beat a fixed average of the same levels? Every backbone",
        "the fixed average",
        [
            "`lwap` − `all_levels_avg` (every level LWAP reads, equal fixed weights: no learned",
            "attention, no head), read as the tables above. Why it wins or collapses where it",
            "does, from the untouched backbones' levels scored one by one: [LEVEL_MEANS.md](LEVEL_MEANS.md).",
        ],
        lambda cells: "all_levels_avg",
    ),
    (
        "## Does `lwap` beat the best mean-based pooler? Every backbone",
        "the best mean-based pooler",
        [
            "`lwap` − the best of `mean`, `first_last_avg` and `last2_avg` on Avg. (all) in each grid",
            "(named in the row), read as the tables above.",
        ],
        best_mean_based,
    ),
]


def overview_tables(grids: Grids, link: Link) -> tuple[list[str], list[tuple[str, Shown]]]:
    """The overview tables (`lwap` against the paper's baseline, `cls` without its MLP, the fixed
    all-levels mean, the best mean-based pooler), and every comparison they show with its table's short
    name (what report_changes reads)."""
    lines, every = [], []
    for title, short, words, pick in TABLES:
        found = rows_against(grids, pick, link)
        lines += table(title, words, found)
        every += [(short, s) for s in found.shown]
    return lines, every
