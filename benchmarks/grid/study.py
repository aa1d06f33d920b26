"""The repository's pooler study: its rows (configs/compare/rows/study.yaml, what `lwap compare --rows
study` reads too), read once, and the rows and groups of rows its own report code reads by name."""

from __future__ import annotations

from typing import Any

from benchmarks import REPO
from lwap.compare.rows import load_rows

ROWS_FILE = REPO / "configs/compare/rows/study.yaml"
ROWS = load_rows(ROWS_FILE)
PLANNED_SEEDS = ROWS.seeds
UNTOUCHED = tuple(ROWS.untouched)  # SimCSE's reference rows of a plain encoder, `mean` first
NATIVE_VARIANTS = ROWS.group("native").rows  # LWAP for already-trained encoders (issue 12)
COMPONENT_VARIANTS = ROWS.group("components").rows  # LWAP's components replaced (issue 37)
SCALE_ROW = ROWS.group("scales").rows[0]  # `lwap-levelnorm`: the levels' scales made alike (issue 50)
SIMCSE_BASELINE = ROWS.group("simcse").rows[0]  # `cls-mlp`: SimCSE's supervised baseline (issue 50)
CLS_READING = ("cls", "lwap")  # `lwap`: every layer's [CLS] as queries, the last [CLS] in its output
MEAN_BASED = ("mean", "first_last_avg", "last2_avg")

Cells = dict[str, list[dict[str, Any]]]


def paper_baseline(cells: Cells) -> str:
    """The row the paper's claim is read against: supervised SimCSE keeps its MLP at inference, so a
    grid with `cls-mlp` cells reads `lwap` against them; otherwise `cls` (unsupervised SimCSE's own)."""
    return SIMCSE_BASELINE if SIMCSE_BASELINE in cells else "cls"
