"""Alignment, uniformity and anisotropy per pooler (SimCSE's measures, the LWAP paper's uniformity claim),
read from the cells and judged: one panel per backbone and regime, one point per pooler, the gaps against
the seed spread, the rank correlation with the STS average (geometry_section writes and draws them).

A grid run since `lwap eval` measures the geometry has it in every cell; a grid made before has none, and
no panel here. A report may add panels measured on retrains of such a grid's cells (`Panel.retrained`;
the repository's: benchmarks/grid/report_geometry.py).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from lwap.compare.cells import load_cells, read
from lwap.compare.grid import REGIME_WORDS, REGIMES, Grid, backbone_name, backbones
from lwap.compare.rows import Rows

MEASURES = ("alignment", "uniformity", "anisotropy")
FIGURE = "alignment_uniformity.png"  # beside the report (and the layer-attention figure)


class Run(NamedTuple):
    """One trained model: its STS-B test geometry, its own STS average, its STS-B dev trajectory."""

    seed: int
    geometry: dict[str, float]
    sts_avg: float | None
    dev: list[tuple[int, float, float]]  # (step, uniformity, alignment) at each STS-B dev evaluation
    kept_step: int | None


class Panel(NamedTuple):
    backbone: str
    regime: str
    runs: dict[str, list[Run]]  # by pooler, in the order of the planned rows
    retrained: bool  # the runs are retrains of cells that predate the measures
    untouched: dict[str, dict[str, Any]]  # pooling -> {"geometry": ..., "sts_avg": ..., "label": ...}
    grid_avg: dict[str, list[float]]  # pooler -> the grid cells' STS averages (every seed)

    @property
    def title(self) -> str:
        retrained = " (retrained)" if self.retrained else ""
        return f"{backbone_name(self.backbone)}, {REGIME_WORDS[self.regime]}{retrained}"


def grid_run(cell: dict[str, Any]) -> Run | None:
    scores, train = cell["scores"], cell["train"]
    if not all(m in scores for m in MEASURES):
        return None
    dev = [(int(s), u, a) for s, u, a in train.get("dev_geometry_by_step") or []]
    return Run(cell["seed"], {m: scores[m] for m in MEASURES}, scores.get("avg_all"), dev, train["best_step"])


def untouched_label(rows: Rows, pooling: str) -> str:
    return f"untouched ({rows.untouched.get(pooling, pooling)})"


def untouched_rows(grid: Grid, backbone: str, rows: Rows) -> dict[str, dict[str, Any]]:
    """The untouched rows whose reference file has the geometry."""
    found = {}
    for pooling in rows.untouched:
        reference = grid.reference_file(backbone, pooling)
        scores = read(reference)["scores"] if reference.exists() else {}
        if all(m in scores for m in MEASURES):
            label = untouched_label(rows, pooling)
            found[pooling] = {"geometry": scores, "sts_avg": scores.get("avg_all"), "label": label}
    return found


def grid_averages(cells: dict[str, list[dict[str, Any]]], poolers: Iterable[str]) -> dict[str, list[float]]:
    """Each pooler's STS averages over every seed of the grid, which the correlations use."""
    return {
        p: [c["scores"]["avg_all"] for c in cells.get(p, []) if "avg_all" in c["scores"]] for p in poolers
    }


def panel(grid: Grid, backbone: str, regime: str, rows: Rows) -> Panel | None:
    """One grid's panel from its own cells (its planned rows); None where no cell has the geometry."""
    cells = load_cells(grid.cells_dir(backbone) / regime, rows.order)
    runs = {p: [r for c in cells.get(p, []) if (r := grid_run(c))] for p in rows.planned}
    runs = {p: found for p, found in runs.items() if found}
    if not runs:
        return None
    averages = grid_averages(cells, runs)
    return Panel(backbone, regime, runs, False, untouched_rows(grid, backbone, rows), averages)


def panels(results: Path, rows: Rows) -> list[Panel]:
    grid = Grid(results, results / "work")
    found = [panel(grid, backbone, regime, rows) for backbone in backbones(results) for regime in REGIMES]
    return [p for p in found if p]


def stats(runs: list[Run], measure: str) -> tuple[float, float, int]:
    values = [r.geometry[measure] for r in runs]
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0, len(values)


def shown(runs: list[Run], measure: str) -> str:
    mean, std, n = stats(runs, measure)
    return f"{mean:.3f} ± {std:.3f}" if n > 1 else f"{mean:.3f}"


def sts_avg(p: Panel, pooler: str) -> float | None:
    """The pooler's STS average: the grid's mean over its seeds (less noisy than the retrained runs)."""
    values = p.grid_avg.get(pooler) or [r.sts_avg for r in p.runs[pooler] if r.sts_avg is not None]
    return statistics.fmean(values) if values else None


def dev_change(runs: list[Run]) -> str:
    """STS-B dev uniformity before training → at the kept step (seeds averaged): what training did."""
    pairs = []
    for run in runs:
        by_step = {step: uniformity for step, uniformity, _ in run.dev}
        if 0 in by_step and run.kept_step in by_step:
            pairs.append((by_step[0], by_step[run.kept_step]))
    if not pairs:
        return "–"
    return f"{statistics.fmean(a for a, _ in pairs):.2f} → {statistics.fmean(b for _, b in pairs):.2f}"


def table(p: Panel) -> list[str]:
    lines = [
        "| pooler | seeds | alignment | uniformity | anisotropy | STS avg (these runs) | STS avg (grid) "
        "| dev uniformity: step 0 → kept |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for pooler, runs in p.runs.items():
        own = [r.sts_avg for r in runs if r.sts_avg is not None]
        grid = p.grid_avg.get(pooler, [])
        cells = [f"`{pooler}`", str(len(runs)), *(shown(runs, m) for m in MEASURES)]
        cells.append(f"{statistics.fmean(own):.2f}" if own else "–")
        cells.append(f"{statistics.fmean(grid):.2f} ({len(grid)} seeds)" if grid else "–")
        lines.append("| " + " | ".join([*cells, dev_change(runs)]) + " |")
    for row in p.untouched.values():
        g, avg = row["geometry"], row["sts_avg"]
        cells = [f"*{row['label']}*", "–", *(f"{g[m]:.3f}" for m in MEASURES), "–"]
        lines.append(
            "| " + " | ".join([*cells, "–" if avg is None else f"{avg:.2f} (no training)", "–"]) + " |"
        )
    return lines


def against(p: Panel, other: str) -> tuple[float, float, str] | None:
    """LWAP − `other`: (Δ uniformity, Δ alignment, the uniformity gap against the seed spread)."""
    if "lwap" not in p.runs or other not in p.runs:
        return None
    (u1, s1, n1), (u2, s2, n2) = stats(p.runs["lwap"], "uniformity"), stats(p.runs[other], "uniformity")
    du = u1 - u2
    da = stats(p.runs["lwap"], "alignment")[0] - stats(p.runs[other], "alignment")[0]
    if min(n1, n2) < 2:
        return du, da, "one seed: spread unknown"
    larger = abs(du) > s1 + s2
    return du, da, f"{'**larger than**' if larger else 'within'} the seed spread ({s1 + s2:.3f})"


def comparisons(p: Panel) -> list[str]:
    out = []
    for other in ("cls", "mean"):
        gap = against(p, other)
        if gap:
            du, da, spread = gap
            out.append(
                f"- `lwap` − `{other}`: uniformity {du:+.3f} ({'more' if du < 0 else 'less'} uniform; "
                f"{spread}), alignment {da:+.3f} ({'worse' if da > 0 else 'better'})."
            )
    if "lwap" in p.runs:
        lwap = stats(p.runs["lwap"], "uniformity")[0]
        start = [f"{row['geometry']['uniformity']:.3f} ({pooling})" for pooling, row in p.untouched.items()]
        if start:
            out.append(f"- `lwap` uniformity {lwap:.3f} against the untouched backbone's {', '.join(start)}.")
    change = dev_change(p.runs.get("lwap", []))
    if change != "–":
        out.append(f"- `lwap`'s own space on STS-B dev, step 0 → kept checkpoint: uniformity {change}.")
    return out


def correlation(p: Panel) -> tuple[float, float, int] | None:
    """Spearman ρ (and p) across poolers between mean uniformity and STS average; None under 4 poolers."""
    from scipy.stats import spearmanr

    poolers = [q for q in p.runs if sts_avg(p, q) is not None]
    if len(poolers) < 4:
        return None
    rho, pvalue = spearmanr(
        [stats(p.runs[q], "uniformity")[0] for q in poolers], [sts_avg(p, q) for q in poolers]
    )
    return float(rho), float(pvalue), len(poolers)


def order(p: Panel, measure: str) -> str:
    ranked = sorted(p.runs, key=lambda q: stats(p.runs[q], measure)[0])
    return " < ".join(f"`{q}`" for q in ranked)


def seed_scale(found: list[Panel]) -> list[str]:
    """How large a one-seed gap is against the seed-to-seed sd measured where poolers have seeds."""
    sds = [stats(runs, "uniformity")[1] for p in found for runs in p.runs.values() if len(runs) > 1]
    single = [
        abs(gap[0])
        for p in found
        for other in ("cls", "mean")
        if (gap := against(p, other)) and gap[2].startswith("one seed")
    ]
    if not sds or not single:
        return []
    return [
        f"- The seed-to-seed sd of uniformity, over the {len(sds)} poolers that have several seeds, is at "
        f"most {max(sds):.3f}; the smallest one-seed gap above is {min(single):.3f}, "
        f"{min(single) / max(max(sds), 1e-9):.0f}× that."
    ]


def answers(found: list[Panel]) -> list[str]:
    """The two questions over every panel: LWAP's uniformity against `cls` and `mean` and its price in
    alignment; whether uniformity goes with the STS score across poolers."""
    lines = [
        "**Does LWAP end with a more uniform space than `cls` and `mean` at the same budget, and at what",
        "cost in alignment?**",
        "",
    ]
    for other in ("cls", "mean"):
        gaps = [(p, gap) for p in found if (gap := against(p, other))]
        if not gaps:
            continue
        sides = []
        for word, side in (
            ("more", [g for g in gaps if g[1][0] < 0]),
            ("less", [g for g in gaps if g[1][0] >= 0]),
        ):
            if side:
                each = "; ".join(f"{p.title} {du:+.3f}, {spread}" for p, (du, _, spread) in side)
                sides.append(f"{word} uniform in {len(side)} of {len(gaps)} ({each})")
        worse = [p for p, (_, da, _) in gaps if da > 0]
        costs = "; ".join(f"{p.title} {da:+.3f}" for p, (_, da, _) in gaps)
        lines.append(
            f"- Against `{other}`: " + "; ".join(sides) + f". Alignment worse (higher) in {len(worse)} of "
            f"{len(gaps)} ({costs})."
        )
    lines += seed_scale(found)
    lines += ["", "**Is uniformity what separates the poolers that score well?**", ""]
    for p in found:
        rho = correlation(p)
        best = max(
            (q for q in p.runs if sts_avg(p, q) is not None), key=lambda q: sts_avg(p, q), default=None
        )
        most = min(p.runs, key=lambda q: stats(p.runs[q], "uniformity")[0])
        if rho is None or best is None:
            lines.append(f"- {p.title}: fewer than 4 poolers with geometry: no rank correlation yet.")
            continue
        lines.append(
            f"- {p.title}: Spearman ρ(uniformity, STS avg) = {rho[0]:+.2f} "
            f"(p = {rho[1]:.2f}, {rho[2]} poolers); "
            f"best STS avg `{best}`, most uniform `{most}`" + (" (the same)." if best == most else ".")
        )
    return lines
