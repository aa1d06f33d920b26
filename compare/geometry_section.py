"""The report's geometry section and its figure: alignment against uniformity, one point per
pooler (seeds averaged, bars ± sd), × for the untouched backbone, one panel per backbone and regime."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lwap.compare.geometry import (
    FIGURE,
    MEASURES,
    Panel,
    answers,
    comparisons,
    order,
    stats,
    table,
)
from lwap.compare.prose import Wording

TITLE = "Embedding geometry: alignment, uniformity, anisotropy"


def intro(wording: Wording, notes: Sequence[str]) -> list[str]:
    return [
        f"## {TITLE}",
        "",
        f"![alignment vs uniformity per pooler]({FIGURE})",
        "",
        f"`{wording.prog} figure` draws it from the cell files (beside the layer-attention figure).",
        "",
        "The LWAP paper claims that contrastive training with LWAP makes the space of pre-trained",
        'embeddings "more uniform". These are SimCSE\'s measures (Wang & Isola, 2020) as `lwap eval`',
        "computes them on STS-B test, embeddings normalized: **alignment**, the mean squared distance",
        "between the sentences of the pairs with gold score ≥ 4; **uniformity**, the log of the mean",
        "exp(−2·squared distance) over all pairs of distinct sentences; **anisotropy**, the mean cosine",
        "over those pairs (Ethayarajh, 2019). Lower is better for all three; uniformity is negative. A",
        "point is a pooler's mean over its seeds (± sd across seeds where it has several); `dev uniformity`",
        "is STS-B dev before training and at the kept checkpoint (the trajectory each run draws in its",
        "`training_curves.png`). The geometry is reported, not used to pick checkpoints.",
        *notes,
        "",
    ]


def geometry_section(found: list[Panel], wording: Wording, notes: Sequence[str] = ()) -> list[str]:
    """The section for `found` (`geometry.panels`, or a report's own: `Report.geometry_panels`); `notes`
    end its introduction (`Report.geometry_notes`). Nothing where no panel has geometry."""
    if not found:
        return []
    lines = [*intro(wording, notes), *answers(found), ""]
    for p in found:
        lines += [f"### {p.title}", "", *table(p), ""]
        lines += [f"- Order by {m}, lowest first: {order(p, m)}." for m in MEASURES]
        lines += [*comparisons(p), ""]
    return lines


def draw_geometry_figure(found: list[Panel], output: Path, wording: Wording) -> bool:
    """The figure of `found` (as `geometry_section`); False (nothing drawn) where there is no panel."""
    if not found:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lwap.checks.files import save_figure_atomically

    columns = min(len(found), 2)
    rows = -(-len(found) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(6.2 * columns, 4.8 * rows), squeeze=False)
    # one colour per pooler, the same in every panel
    drawn = dict.fromkeys(pooler for p in found for pooler in p.runs)
    colours = {pooler: f"C{i % 10}" for i, pooler in enumerate(drawn)}
    for axis, p in zip(axes.flat, found, strict=False):
        for pooler, runs in p.runs.items():
            (u, su, n), (a, sa, _) = stats(runs, "uniformity"), stats(runs, "alignment")
            axis.errorbar(
                u,
                a,
                xerr=su if n > 1 else None,
                yerr=sa if n > 1 else None,
                fmt="o",
                color=colours[pooler],
                markersize=7,
                capsize=3,
                zorder=3,
            )
            axis.annotate(pooler, (u, a), textcoords="offset points", xytext=(5, 4), fontsize=8)
        for row in p.untouched.values():
            g = row["geometry"]
            axis.scatter(g["uniformity"], g["alignment"], marker="x", color="black", s=50, zorder=3)
            axis.annotate(
                row["label"],
                (g["uniformity"], g["alignment"]),
                textcoords="offset points",
                xytext=(5, -11),
                fontsize=7,
                style="italic",
            )
        seeds = sorted({len(runs) for runs in p.runs.values()})
        axis.set_title(f"{p.title}; seeds per pooler: {'/'.join(map(str, seeds))}", fontsize=9)
        axis.set_xlabel("uniformity (STS-B test; lower = more uniform)", fontsize=8)
        axis.set_ylabel("alignment (pairs with gold ≥ 4; lower = closer)", fontsize=8)
        axis.grid(alpha=0.3)
        axis.margins(0.15)
    for axis in list(axes.flat)[len(found) :]:
        axis.axis("off")
    figure.suptitle(
        f"Alignment vs uniformity per pooler (× = untouched backbone; {wording.prog} figure)", fontsize=10
    )
    figure.tight_layout()
    try:
        save_figure_atomically(figure, output, dpi=100)
    finally:
        plt.close(figure)
    return True
