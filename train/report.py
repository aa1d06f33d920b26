"""What a run reports: dev Spearman before/best/final from the trainer's log history, and the curves PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwap.files import save_figure_atomically

DEV_METRIC = "eval_stsb-dev_spearman_cosine"


def dev_scores(log_history: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """(step, STS-B dev Spearman) of every evaluation, in order; one per step (the last one wins)."""
    by_step: dict[int, float] = {}
    for entry in log_history:
        if DEV_METRIC in entry:
            by_step[int(entry["step"])] = float(entry[DEV_METRIC])
    return sorted(by_step.items())


def train_losses(log_history: list[dict[str, Any]]) -> list[tuple[int, float]]:
    return [(int(e["step"]), float(e["loss"])) for e in log_history if "loss" in e and "step" in e]


def plot_curves(log_history: list[dict[str, Any]], path: Path, title: str) -> None:
    """Training loss (left axis) and STS-B dev Spearman (right axis) over optimizer steps."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    losses = train_losses(log_history)
    scores = dev_scores(log_history)
    figure, loss_axis = plt.subplots(figsize=(8, 4.5), dpi=100)
    if losses:
        loss_axis.plot(*zip(*losses, strict=True), color="tab:blue", label="training loss")
    loss_axis.set_xlabel("optimizer step")
    loss_axis.set_ylabel("training loss (InfoNCE)", color="tab:blue")
    score_axis = loss_axis.twinx()
    if scores:
        score_axis.plot(*zip(*scores, strict=True), color="tab:red", marker="o", label="STS-B dev Spearman")
    score_axis.set_ylabel("STS-B dev Spearman (cosine)", color="tab:red")
    loss_axis.set_title(title)
    figure.tight_layout()
    try:
        save_figure_atomically(figure, path)
    finally:
        plt.close(figure)
