"""A reading of a grid's table in one sentence, computed from the cells: what training did to STS-B dev
for the rows that start from the backbone's own vector."""

from __future__ import annotations

import statistics
from typing import Any

Cells = dict[str, list[dict[str, Any]]]


def dev(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(c["train"][key] * 100 for c in runs)


def dev_from_the_backbone(cells: Cells) -> list[str]:
    """The rows whose step-0 model is `mean`'s (every seed's STS-B dev at step 0 equal to it: `mean` and
    the LWAP variants started from the backbone's vector), and how far training moved their dev score.
    Said only where a row besides `mean` starts there; the table's last column has each row alone."""
    if "mean" not in cells:
        return []
    start = cells["mean"][0]["train"]["dev_spearman_before"]
    rows = [
        row
        for row, runs in cells.items()
        if all(abs(c["train"]["dev_spearman_before"] - start) < 1e-9 for c in runs)
    ]
    if len(rows) < 2:
        return []
    moves = {
        row: dev(cells[row], "best_dev_spearman") - dev(cells[row], "dev_spearman_before") for row in rows
    }
    listed = ", ".join(
        f"`{row}` {dev(cells[row], 'dev_spearman_before'):.2f} → {dev(cells[row], 'best_dev_spearman'):.2f} "
        f"({moves[row]:+.2f})"
        for row in rows
    )
    most = max(rows, key=lambda row: abs(moves[row]))
    return [
        f"STS-B dev for the rows that start from the backbone's own mean-pooled vector (the same step-0 "
        f"score as `mean`), step 0 → kept checkpoint, seeds averaged: {listed}; the largest move is "
        f"`{most}`'s, {moves[most]:+.2f} points.",
        "",
    ]
