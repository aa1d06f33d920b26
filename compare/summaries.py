"""Two readings of a grid's table in one sentence each, computed from the cells: what training did to
STS-B dev for the rows that start from the backbone's own vector, and how the poolers that read [CLS]
vectors (`cls`, `lwap`) stand against the mean-based ones on SciFact."""

from __future__ import annotations

import statistics
from typing import Any

Cells = dict[str, list[dict[str, Any]]]
CLS_READING = ("cls", "lwap")  # `lwap`: every layer's [CLS] as queries, the last [CLS] in its output
MEAN_BASED = ("mean", "first_last_avg", "last2_avg")


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


def scifact_cls_against_mean(cells: Cells) -> list[str]:
    """The smallest SciFact nDCG@10 margin between any [CLS]-reading pooler and any mean-based one
    (pooler means over seeds): positive when each of `cls` and `lwap` leads every mean-based pooler."""
    if not all(row in cells for row in CLS_READING + MEAN_BASED):
        return []
    means = {row: statistics.fmean(c["scores"]["scifact_ndcg@10"] for c in cells[row]) for row in cells}
    low = min(CLS_READING, key=lambda row: means[row])
    high = max(MEAN_BASED, key=lambda row: means[row])
    margin = means[low] - means[high]
    readers = " and ".join(f"`{row}`" for row in CLS_READING)
    based = ", ".join(f"`{row}`" for row in MEAN_BASED)
    if margin > 0:
        verdict = f"{readers} lead every mean-based pooler ({based}) by at least {margin:.2f} nDCG@10 points"
    else:
        verdict = f"{readers} do not both lead every mean-based pooler ({based})"
    return [
        f"SciFact, [CLS]-reading against mean-based poolers: {verdict}; the smallest margin is "
        f"`{low}` − `{high}` = {margin:+.2f} ({means[low]:.2f} against {means[high]:.2f}).",
        "",
    ]
