"""What LWAP attends to: each trained LWAP row's mean attention per layer (STS-B test, seeds averaged),
as the report's section and as a figure (one panel per regime). The rows drawn are the rows file's
`figure` (a latent-query row's profile is the attention its learned queries give each layer)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from lwap.compare.cells import load_cells
from lwap.compare.grid import REGIME_WORDS, REGIMES, Grid, backbone_name, backbones
from lwap.compare.prose import Wording, user_wording
from lwap.compare.rows import Rows, load_rows


class Profile(NamedTuple):
    """One trained LWAP row's layer attention on one backbone and regime, averaged over its seeds."""

    backbone: str
    row: str
    seeds: int
    retrained: bool
    attention: list[float]  # mean attention each hidden state receives (index 0 = embedding output)

    @property
    def label(self) -> str:
        retrained = " retrained" if self.retrained else ""
        seeds = f"{self.seeds} seed{'s' * (self.seeds > 1)}"
        return f"{backbone_name(self.backbone)} · {self.row} ({seeds}{retrained})"


def attention_profiles(grid: Grid, backbones: list[str], regime: str, rows: Rows) -> list[Profile]:
    """The profiles the figure draws: every backbone's `rows.figure` that have cells with a profile."""
    found = []
    for backbone in backbones:
        cells = load_cells(grid.cells_dir(backbone) / regime, rows.order)
        for row in rows.figure:
            runs = [c for c in cells.get(row, []) if c.get("layer_attention")]
            if runs:
                columns = zip(*(c["layer_attention"]["mean_attention"] for c in runs), strict=True)
                retrained = any(c.get("layer_attention_source") for c in runs)
                found.append(
                    Profile(backbone, row, len(runs), retrained, [statistics.fmean(v) for v in columns])
                )
    return found


def layer_name(index: int) -> str:
    return "the embedding output" if index == 0 else f"layer {index}"


def attention_section(
    grid: Grid, backbones: list[str], rows: Rows, wording: Wording, notes: Sequence[str] = ()
) -> list[str]:
    """The figure in the report, and what each profile shows in numbers: where its attention peaks, what
    its last layer gets against uniform, and how the paper's `lwap` differs between the backbones;
    `notes` end the section's introduction (a report's own lines, `Report.attention_notes`)."""
    by_regime = {regime: attention_profiles(grid, backbones, regime, rows) for regime in REGIMES}
    if not any(by_regime.values()):
        return []
    lines = [
        "## What LWAP attends to",
        "",
        "![mean attention per layer](layer_attention.png)",
        "",
        f"`{wording.prog} figure` draws it from the cell files: the mean attention",
        "each hidden state receives as a key (over query layers and STS-B test sentences), seeds averaged.",
        *notes,
        "",
    ]
    for regime, profiles in by_regime.items():
        if not profiles:
            continue
        lines += [f"{REGIME_WORDS[regime].capitalize()}:", ""]
        for profile in profiles:
            a = profile.attention
            top, low = a.index(max(a)), a.index(min(a))
            lines.append(
                f"- {profile.label}: most on {layer_name(top)} ({a[top]:.3f}), least on {layer_name(low)} "
                f"({a[low]:.3f}); last layer {a[-1]:.3f} against a uniform {1 / len(a):.3f}."
            )
        paper = [p for p in profiles if p.row == "lwap"]
        first = paper[0] if paper else None
        for other in paper[1:]:
            if len(other.attention) != len(first.attention):  # another depth: layer i is not the same layer
                continue
            shift = [b - a for a, b in zip(first.attention, other.attention, strict=True)]
            up, down = shift.index(max(shift)), shift.index(min(shift))
            lines.append(
                f"- `lwap` on {backbone_name(other.backbone)} against {backbone_name(first.backbone)}: "
                f"{layer_name(up)} gains the most ({shift[up]:+.3f}), {layer_name(down)} loses the most "
                f"({shift[down]:+.3f})."
            )
        lines.append("")
    return lines


def draw_figure(
    results: Path, output: Path, wording: Wording | None = None, rows: Rows | None = None
) -> None:
    """The mean attention each layer receives (STS-B test), per backbone and regime, averaged over the
    seeds of each trained LWAP row; one panel per regime."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wording, rows = wording or user_wording(f"{results}/"), rows or load_rows()
    grid, found = Grid(results, results / "work"), backbones(results)
    by_regime = {regime: attention_profiles(grid, found, regime, rows) for regime in REGIMES}
    entries = max((len(series) for series in by_regime.values()), default=0) + 2
    figure, panels = plt.subplots(1, len(REGIMES), figsize=(12, 4.2 + 0.18 * entries), sharey=True)
    # one colour per drawn (backbone, row), the same in both panels; tab10's "C0".."C9" repeat past ten
    drawn = list(dict.fromkeys((p.backbone, p.row) for series in by_regime.values() for p in series))
    palette = plt.get_cmap("tab10" if len(drawn) <= 10 else "tab20")
    top = max((max(p.attention) for series in by_regime.values() for p in series), default=1.0)
    for panel, regime in zip(panels, REGIMES, strict=True):
        series = by_regime[regime]
        width = 0.8 / max(len(series), 1)
        for i, profile in enumerate(series):
            x = [j + (i - (len(series) - 1) / 2) * width for j in range(len(profile.attention))]
            colour = palette(drawn.index((profile.backbone, profile.row)) % palette.N)
            panel.bar(x, profile.attention, width=width, label=profile.label, color=colour)
        if series:
            # backbones of different depths share the axis: layer i at x = i, each depth its uniform line
            depths = sorted({len(p.attention) for p in series})
            for style, levels in zip(("--", ":", "-."), depths, strict=False):
                label = "uniform" if len(depths) == 1 else f"uniform over {levels} levels"
                panel.axhline(1 / levels, color="gray", linestyle=style, linewidth=1, label=label)
            layers = depths[-1]
            panel.set_xticks(range(layers), ["emb", *map(str, range(1, layers))])
            panel.set_ylim(0, 1.1 * top)  # one scale for both panels (they share it)
            panel.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
        panel.set_title(f"{REGIME_WORDS[regime]} SimCSE", fontsize=10)
        panel.set_xlabel("layer attended (key; emb = embedding output)")
    panels[0].set_ylabel("mean attention weight (STS-B test)")
    figure.suptitle(f"What LWAP attends to, per backbone ({wording.prog} figure)", fontsize=10)
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=120)
    plt.close(figure)
