"""docs/GEOMETRY.md and docs/alignment_uniformity.png from the geometry cells (`geometry_cells.py report`).

Every sentence of the answers is computed from the cell files: the figures, the differences and the rank
correlations are filled in here, not written by hand, so rerunning after more cells finish updates them.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from geometry_cells import (
    BACKBONES,
    GEOMETRY,
    POOLERS,
    REGIME,
    REPO,
    SEED,
    backbone_name,
    committed_dir,
    geometry_dir,
    untouched_poolings,
    untouched_source,
)
from scipy.stats import spearmanr

FIGURE = REPO / "docs" / "alignment_uniformity.png"
COMMAND = "python benchmarks/geometry_cells.py report"
TABLE_ORDER = ("lwap", "weighted", "cls", "mean", "first_last_avg", "last2_avg")
UNTOUCHED_LABEL = {
    "mean": "untouched (mean)",
    "cls": "untouched ([CLS])",
    "first_last_avg": "untouched (first-last)",
}


def load_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def committed_avg(backbone: str, pooler: str, key: str = "avg_all") -> tuple[float, float, int] | None:
    """Mean, sample std and count of the committed grid's STS average (or `key`) over its seeds."""
    values = [
        json.loads(p.read_text(encoding="utf-8"))["scores"][key]
        for p in sorted((committed_dir(backbone) / REGIME).glob(f"{pooler}-seed*.json"))
    ]
    if not values:
        return None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0, len(values)


def collect(backbone: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(trained cells by pooler, untouched rows by pooling) that have finished."""
    trained = {
        pooler: cell
        for pooler in POOLERS
        if (cell := load_json(geometry_dir(backbone) / f"{pooler}-seed{SEED}.json")) is not None
    }
    untouched = {}
    for pooling in untouched_poolings(backbone):
        cell = load_json(geometry_dir(backbone).parent / f"untouched-{pooling}.json")
        if cell is not None:
            committed = json.loads(untouched_source(backbone, pooling).read_text(encoding="utf-8"))
            untouched[pooling] = {
                **cell,
                "committed_avg": committed["scores"]["avg_all"],
                "committed_stsb": committed["scores"]["stsb"],
            }
    return trained, untouched


def table(backbone: str, trained: dict[str, dict], untouched: dict[str, dict]) -> list[str]:
    lines = [
        "| pooler | align. | uniform. | anisotropy | STS-B (this run / grid mean) | STS avg (this run) "
        "| STS avg (grid: mean ± sd, n) | dev uniformity: step 0 → kept |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for pooler in TABLE_ORDER:
        cell = trained.get(pooler)
        grid = committed_avg(backbone, pooler)
        grid_text = f"{grid[0]:.2f} ± {grid[1]:.2f} ({grid[2]})" if grid else "—"
        if cell is None:
            lines.append(f"| {pooler} | pending | | | | | {grid_text} | |")
            continue
        g = cell["geometry"]
        stsb = committed_avg(backbone, pooler, "stsb")
        own = cell["scores"].get("avg_all")
        lines.append(
            f"| {pooler} | {g['alignment']:.3f} | {g['uniformity']:.3f} | {g['anisotropy']:.3f} | "
            f"{cell['scores']['stsb']:.2f} / {stsb[0] if stsb else float('nan'):.2f} | "
            f"{'—' if own is None else f'{own:.2f}'} | {grid_text} | {dev_change(cell)} |"
        )
    for pooling, cell in untouched.items():
        g = cell["geometry"]
        lines.append(
            f"| *{UNTOUCHED_LABEL[pooling]}* | {g['alignment']:.3f} | {g['uniformity']:.3f} | "
            f"{g['anisotropy']:.3f} | {cell['scores']['stsb']:.2f} / {cell['committed_stsb']:.2f} | — "
            f"| {cell['committed_avg']:.2f} (no training) | |"
        )
    return lines


def dev_change(cell: dict[str, Any]) -> str:
    """STS-B dev uniformity before training and at the kept step (what training itself did to the space)."""
    by_step = {entry["step"]: entry for entry in cell.get("dev_geometry", [])}
    kept = cell["train"].get("best_step")
    if 0 not in by_step or kept not in by_step:
        return "—"
    return f"{by_step[0]['uniformity']:.2f} → {by_step[kept]['uniformity']:.2f} (step {kept})"


def comparisons(trained: dict[str, dict], untouched: dict[str, dict]) -> list[str]:
    """LWAP against cls and mean at the same budget: uniformity gained, alignment paid (single seed);
    and against where it started: the untouched backbone, and its own step-0 space on STS-B dev."""
    if "lwap" not in trained:
        return ["- LWAP's cell has not finished: no comparison yet."]
    lwap = trained["lwap"]["geometry"]
    out = []
    for pooling, cell in untouched.items():
        g = cell["geometry"]
        direction = "more" if lwap["uniformity"] < g["uniformity"] else "less"
        out.append(
            f"- LWAP vs the {UNTOUCHED_LABEL[pooling]} backbone: uniformity {lwap['uniformity']:.3f} vs "
            f"{g['uniformity']:.3f} ({direction} uniform), anisotropy {lwap['anisotropy']:.3f} vs "
            f"{g['anisotropy']:.3f}, alignment {lwap['alignment']:.3f} vs {g['alignment']:.3f}."
        )
    change = dev_change(trained["lwap"])
    if change != "—":
        out.append(
            f"- LWAP's own space on STS-B dev, before training → kept checkpoint: uniformity {change}."
        )
    for other in ("cls", "mean"):
        if other not in trained:
            out.append(f"- `{other}`: cell not finished.")
            continue
        g = trained[other]["geometry"]
        du = lwap["uniformity"] - g["uniformity"]
        da = lwap["alignment"] - g["alignment"]
        more = "more" if du < 0 else "less"
        cost = "worse (higher)" if da > 0 else "better (lower)"
        out.append(
            f"- LWAP vs `{other}`: uniformity {lwap['uniformity']:.3f} vs {g['uniformity']:.3f} "
            f"(Δ {du:+.3f}: LWAP {more} uniform); alignment {lwap['alignment']:.3f} vs {g['alignment']:.3f} "
            f"(Δ {da:+.3f}: {cost}); anisotropy {lwap['anisotropy']:.3f} vs {g['anisotropy']:.3f}."
        )
    return out


def correlations(backbone: str, trained: dict[str, dict]) -> list[str]:
    """Rank correlation across the trained poolers between each measure and the STS average (the grid's
    3-seed mean, less noisy than the single retrained seed; the retrained seed's own avg in brackets)."""
    poolers = [p for p in TABLE_ORDER if p in trained and committed_avg(backbone, p)]
    by_score = sorted(poolers, key=lambda p: -committed_avg(backbone, p)[0])  # type: ignore[index]
    orders = [f"- Order by STS avg (grid mean), best first: {' > '.join(f'`{p}`' for p in by_score)}."]
    for measure in ("uniformity", "alignment", "anisotropy"):
        ranked = sorted(poolers, key=lambda p: trained[p]["geometry"][measure])
        orders.append(f"- Order by {measure}, lowest first: {' < '.join(f'`{p}`' for p in ranked)}.")
    if len(poolers) < 4:
        return [*orders, f"- Rank correlations wait for at least 4 finished poolers ({len(poolers)} so far)."]
    grid = [committed_avg(backbone, p)[0] for p in poolers]  # type: ignore[index]
    own = [trained[p]["scores"].get("avg_all", float("nan")) for p in poolers]
    out = list(orders)
    for measure in ("uniformity", "alignment", "anisotropy"):
        values = [trained[p]["geometry"][measure] for p in poolers]
        rho, pvalue = spearmanr(values, grid)
        rho_own, _ = spearmanr(values, own)
        out.append(
            f"- {measure} vs STS avg over {len(poolers)} poolers: Spearman ρ = {rho:+.2f} (p = {pvalue:.2f}; "
            f"with this run's own STS avg: {rho_own:+.2f}). Lower {measure} goes with "
            f"{'higher' if rho < 0 else 'lower'} STS."
        )
    best = max(poolers, key=lambda p: committed_avg(backbone, p)[0])  # type: ignore[index]
    most_uniform = min(poolers, key=lambda p: trained[p]["geometry"]["uniformity"])
    out.append(
        f"- Best STS avg in the grid: `{best}`; most uniform after training: `{most_uniform}`"
        + (" (the same pooler)." if best == most_uniform else " (not the same pooler).")
    )
    return out


def plot(panels: list[tuple[str, dict[str, dict], dict[str, dict]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from lwap.files import save_figure_atomically

    figure, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 5), dpi=100, squeeze=False)
    colors = dict(zip(TABLE_ORDER, plt.get_cmap("tab10").colors, strict=False))
    for axis, (name, trained, untouched) in zip(axes[0], panels, strict=True):
        for pooler, cell in trained.items():
            g = cell["geometry"]
            axis.scatter(g["uniformity"], g["alignment"], color=colors[pooler], s=60, zorder=3)
            axis.annotate(
                pooler, (g["uniformity"], g["alignment"]), textcoords="offset points", xytext=(5, 4)
            )
        for pooling, cell in untouched.items():
            g = cell["geometry"]
            axis.scatter(g["uniformity"], g["alignment"], marker="x", color="black", s=60, zorder=3)
            axis.annotate(
                UNTOUCHED_LABEL[pooling],
                (g["uniformity"], g["alignment"]),
                textcoords="offset points",
                xytext=(5, -11),
                fontsize=8,
                style="italic",
            )
        axis.set_title(f"{name}, {REGIME}ervised SimCSE, seed {SEED}")
        axis.set_xlabel("uniformity (STS-B test; lower = more uniform)")
        axis.set_ylabel("alignment (STS-B test pairs, gold ≥ 4; lower = better)")
        axis.grid(alpha=0.3)
        axis.margins(0.15)
    figure.suptitle("Alignment vs uniformity per pooler (× = untouched backbone, no training)")
    figure.tight_layout()
    try:
        save_figure_atomically(figure, path)
    finally:
        plt.close(figure)


INTRO = """\
# Embedding geometry: alignment, uniformity, anisotropy per pooler

<!-- generated by `{command}`: edit benchmarks/geometry_report.py, not this file -->

The LWAP paper claims that contrastive training with LWAP "regularizes the anisotropic space of
pre-trained embeddings", making it "more uniform". These are SimCSE's measures (Wang & Isola, 2020),
computed by `lwap eval` on STS-B test (`lwap.eval.geometry`): embeddings normalized; **alignment** =
mean squared distance between the sentences of the {pairs} pairs with gold score ≥ 4; **uniformity** =
log of the mean of exp(−2·squared distance) over all {sentence_pairs:,} pairs of the {sentences:,} distinct
sentences;
**anisotropy** = the mean cosine over those same pairs (Ethayarajh, 2019; exact, not sampled). Lower is
better for all three; uniformity is negative. Training logs the same three on STS-B *dev* at every dev
evaluation (the test set never drives training) and draws their trajectory in `training_curves.png`.

The grid cells on main predate these measures and keep no models, so seed {seed} of every pooler of the
{regime}ervised grid was retrained with exactly its committed config and overrides
(`benchmarks/geometry_cells.py run`), and evaluated on the 7 STS tasks in bf16 at length 256 as the grid
was; the cells are in `benchmarks/results/compare/geometry/`. "STS avg (this run)" is the retrained
cell's own average; "grid" is the committed cells' mean over their seeds. One seed per pooler: the
geometry's seed-to-seed spread is not measured, so a small difference between two poolers is not a
finding (the grid's ± sd gives the scale of seed noise in the scores). The paper says "pairs with a
score higher than 4" and released no code for this; `lwap eval` takes gold ≥ 4.0 (the issue's reading),
a choice recorded in every results.json.
"""


def write_report(path: Path) -> None:
    panels = []
    sections: list[str] = []
    example = None
    for backbone in BACKBONES:
        trained, untouched = collect(backbone)
        if not trained and not untouched:
            continue
        example = example or next(iter([*trained.values(), *untouched.values()]))
        name = backbone_name(backbone)
        panels.append((name, trained, untouched))
        sections += [
            f"## {name} ({REGIME}ervised, seed {SEED})",
            "",
            *table(backbone, trained, untouched),
            "",
        ]
        sections += ["**Does LWAP end more uniform than `cls` and `mean` at the same budget?**", ""]
        sections += [*comparisons(trained, untouched), ""]
        sections += ["**Is uniformity what separates the poolers that score well?**", ""]
        sections += [*correlations(backbone, trained), ""]
    if example is None:
        raise SystemExit("no geometry cells yet: run `python benchmarks/geometry_cells.py run` first")
    plot(panels, FIGURE)
    geometry = example["geometry"]
    intro = INTRO.format(
        command=COMMAND,
        pairs=geometry["positive_pairs"],
        sentences=geometry["sentences"],
        sentence_pairs=geometry["sentences"] * (geometry["sentences"] - 1) // 2,
        seed=SEED,
        regime=REGIME,
    )
    figure_link = f"![alignment vs uniformity]({FIGURE.name})"
    lines = [intro, figure_link, "", f"Figure and tables: `{COMMAND}`.", "", *sections]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(REPO)} and {FIGURE.relative_to(REPO)} ({GEOMETRY.relative_to(REPO)})")
