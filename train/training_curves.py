"""A run's curves, read from the trainer's log history: the training loss, the dev scores (before, best,
final: train_summary.json) and STS-B dev geometry, and their plot (training_curves.png)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwap.checks.files import save_figure_atomically
from lwap.train.dev_sets import STSB_DEV_KEY

DEV_METRIC = STSB_DEV_KEY  # STS-B dev Spearman: the default dev set's logged metric
DEV_ALIGNMENT = "eval_stsb-dev_alignment"
DEV_UNIFORMITY = "eval_stsb-dev_uniformity"


def dev_scores(log_history: list[dict[str, Any]], key: str = DEV_METRIC) -> list[tuple[int, float]]:
    """(step, dev score under `key`) of every evaluation, in order; one per step (the last one wins)."""
    by_step: dict[int, float] = {}
    for entry in log_history:
        if key in entry:
            by_step[int(entry["step"])] = float(entry[key])
    return sorted(by_step.items())


def train_losses(log_history: list[dict[str, Any]]) -> list[tuple[int, float]]:
    return [(int(e["step"]), float(e["loss"])) for e in log_history if "loss" in e and "step" in e]


def dev_geometry(log_history: list[dict[str, Any]]) -> list[tuple[int, float, float]]:
    """(step, uniformity, alignment) of every STS-B dev evaluation that logged them, in step order."""
    by_step: dict[int, tuple[float, float]] = {}
    for entry in log_history:
        if DEV_ALIGNMENT in entry and DEV_UNIFORMITY in entry:
            by_step[int(entry["step"])] = (float(entry[DEV_UNIFORMITY]), float(entry[DEV_ALIGNMENT]))
    return [(step, *values) for step, values in sorted(by_step.items())]


def plot_curves(
    log_history: list[dict[str, Any]],
    path: Path,
    title: str,
    kept_step: int | None = None,
    dev_key: str = DEV_METRIC,
    dev_name: str = "STS-B dev Spearman",
) -> None:
    """Training loss (left axis) and the dev score (right axis: `dev_key`, named `dev_name`) over
    optimizer steps, the kept checkpoint (`kept_step`) marked; beside them, where the dev evaluations
    logged the geometry, the alignment-uniformity trajectory (SimCSE's Figure 2), from the first
    evaluation to the last."""
    import matplotlib  # here, not at the top: importing lwap.train.run must not pick a notebook's backend

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    losses = train_losses(log_history)
    scores = dev_scores(log_history, dev_key)
    trajectory = dev_geometry(log_history)
    if trajectory:
        figure, (loss_axis, geometry_axis) = plt.subplots(
            1, 2, figsize=(13, 4.5), dpi=100, gridspec_kw={"width_ratios": [1.6, 1]}
        )
        plot_trajectory(geometry_axis, trajectory, kept_step)
    else:
        figure, loss_axis = plt.subplots(figsize=(8, 4.5), dpi=100)
    if losses:
        loss_axis.plot(*zip(*losses, strict=True), color="tab:blue", label="training loss")
    loss_axis.set_xlabel("optimizer step")
    loss_axis.set_ylabel("training loss (InfoNCE)", color="tab:blue")
    score_axis = loss_axis.twinx()
    if scores:
        score_axis.plot(*zip(*scores, strict=True), color="tab:red", marker="o", label=dev_name)
        kept = [score for step, score in scores if step == kept_step]
        if kept:
            score_axis.scatter([kept_step], kept, marker="*", s=200, color="black", zorder=3)
            score_axis.annotate(
                f"kept: step {kept_step}",
                (kept_step, kept[0]),
                textcoords="offset points",
                xytext=(-8, -14),
                ha="right",
            )
    score_axis.set_ylabel(f"{dev_name} (cosine; selects the kept step)", color="tab:red")
    loss_axis.set_title(title)
    figure.tight_layout()
    try:
        save_figure_atomically(figure, path)
    finally:
        plt.close(figure)


def plot_trajectory(axis: Any, trajectory: list[tuple[int, float, float]], kept_step: int | None) -> None:
    """Alignment (y) against uniformity (x) per dev evaluation, arrows in training order; lower-left is
    better on both axes (SimCSE, Fig. 2)."""
    steps, uniform, align = zip(*trajectory, strict=True)
    axis.plot(uniform, align, color="tab:gray", linewidth=1, zorder=1)
    for k in range(len(trajectory) - 1):
        axis.annotate(
            "",
            xy=(uniform[k + 1], align[k + 1]),
            xytext=(uniform[k], align[k]),
            arrowprops={"arrowstyle": "->", "color": "tab:gray"},
        )
    axis.scatter(uniform, align, color="tab:purple", s=18, zorder=2)
    for step, x, y in trajectory:
        axis.annotate(str(step), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    axis.scatter(
        [uniform[0]],
        [align[0]],
        marker="s",
        s=70,
        facecolors="none",
        edgecolors="black",
        zorder=3,
        label=f"start (step {steps[0]})",
    )
    if kept_step in steps:
        k = steps.index(kept_step)
        axis.scatter(
            [uniform[k]],
            [align[k]],
            marker="*",
            s=160,
            color="tab:red",
            zorder=3,
            label=f"kept (step {kept_step})",
        )
    axis.set_xlabel("uniformity (STS-B dev; lower = more uniform)")
    axis.set_ylabel("alignment (STS-B dev, gold >= 4; lower = better)")
    axis.set_title("alignment vs uniformity over training")
    axis.legend(fontsize=8, loc="best")
