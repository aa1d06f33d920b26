"""The comparison as Markdown, from the cell files alone: per backbone and regime a table (mean ± std
over seeds), the verdicts, the attention and geometry sections, what a re-run reproduces, and every run
listed."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lwap.compare import settings
from lwap.compare.attention import attention_section
from lwap.compare.cells import load_cells, shared_overrides
from lwap.compare.decomposition import decomposition
from lwap.compare.gate_section import gate_sections, read_gates
from lwap.compare.geometry_section import geometry_section
from lwap.compare.grid import (
    BACKBONE,
    PLANNED_SEEDS,
    POOLERS,
    REGIME_TITLES,
    REGIMES,
    STS_COLUMNS,
    STS_LABELS,
    UNTOUCHED_POOLINGS,
    Grid,
    backbone_name,
    backbones,
)
from lwap.compare.overview import overview_tables
from lwap.compare.prose import BACKBONE_NOTES, Wording, backbone_title, header, user_wording
from lwap.compare.reruns import rerun_section
from lwap.compare.summaries import dev_from_the_backbone, scifact_cls_against_mean
from lwap.compare.verdicts import (
    against_untouched,
    below_step_zero,
    budget_check,
    mean_std,
    standing,
    variant_legend,
    variant_verdicts,
    verdicts,
)
from lwap.files import read_json_object

COLUMNS = [
    *zip(STS_COLUMNS, STS_LABELS, strict=True),
    ("avg_all", "Avg. (all)"),
    ("avg_wmean", "Avg. (wmean)"),
    ("scifact_ndcg@10", "SciFact nDCG@10"),
]


def grid_status(regime: str, cells: dict[str, list[dict[str, Any]]], backbone: str, wording: Wording) -> str:
    """How much of the planned grid (every pooler × seeds 0, 1, 2) is done, and its cost per cell."""
    done = sum(len(runs) for pooler, runs in cells.items() if pooler in POOLERS)
    planned = len(POOLERS) * len(PLANNED_SEEDS)
    minutes = [
        (c["train_wall_seconds"] + c["eval_wall_seconds"]) / 60
        for pooler, runs in cells.items()
        if pooler in POOLERS
        for c in runs
    ]
    status = f"Grid: {done} of {planned} planned cells ({len(POOLERS)} poolers × seeds "
    status += ", ".join(map(str, PLANNED_SEEDS)) + ")"
    if minutes:
        status += f"; median {statistics.median(minutes):.1f} min per cell (train + eval, as run)"
    if done < planned:
        status += (
            ". The missing cells are runs the grid has not reached yet, not runs left out: "
            f"`{continue_command(regime, cells, backbone, wording)}` continues it"
        )
        if not cells and backbone != BACKBONE:
            status += " (with the `--set` budget chosen for this backbone, if it has one)"
    return status + "."


def continue_command(
    regime: str, cells: dict[str, list[dict[str, Any]]], backbone: str, wording: Wording
) -> str:
    """The command that runs a grid's missing cells: its backbone and the `--set` budget its cells were
    made with, since the runner refuses a cell made with another budget (cells.check_same_budget)."""
    command = f"{wording.prog} run --regime {regime}"
    if backbone != BACKBONE:
        command += f" --backbone {backbone}"
    budget = shared_overrides(cells)
    return command + "".join(f" --set {o}" for o in budget if not o.startswith("model.backbone="))


def figure(value: float | None) -> str:
    """A score as the tables show it; – where a cell did not measure it (an STS-only evaluation)."""
    return "–" if value is None else f"{value:.2f}"


def regime_section(
    grid: Grid,
    backbone: str,
    regime: str,
    reference: dict[str, Any] | None,
    others: Sequence[dict[str, Any]],
    wording: Wording,
) -> list[str]:
    cells = load_cells(grid.cells_dir(backbone) / regime)
    if not cells and not reference:
        return [f"_No cells of the `{regime}` regime yet._", ""]
    lines = [grid_status(regime, cells, backbone, wording), ""]
    budget = shared_overrides(cells)
    if budget:
        listed = ", ".join(f"`{o}`" for o in budget)
        lines += [f"Settings beyond `{REGIMES[regime]}`: {listed}", ""]
    lines += settings.grid_flag([c for runs in cells.values() for c in runs])
    header_row = "| pooler | seeds | " + " | ".join(label for _, label in COLUMNS) + " | dev before → best |"
    lines += [header_row, "|" + " --- |" * (len(COLUMNS) + 3)]
    if reference:
        values = " | ".join(figure(reference["scores"].get(key)) for key, _ in COLUMNS)
        lines.append(f"| untouched backbone (mean, no training) | – | {values} | – |")
    for other in others:
        values = " | ".join(figure(other["scores"].get(key)) for key, _ in COLUMNS)
        lines.append(f"| untouched backbone ({other['pooling']}, no training) | – | {values} | – |")
    for pooler, runs in cells.items():
        parts = []
        for key, _ in COLUMNS:
            if any(key not in c["scores"] for c in runs):
                parts.append("–")
                continue
            mean, std = mean_std([c["scores"][key] for c in runs])
            parts.append(f"{mean:.2f} ± {std:.2f}" if len(runs) > 1 else f"{mean:.2f}")
        before = statistics.fmean(c["train"]["dev_spearman_before"] * 100 for c in runs)
        best = statistics.fmean(c["train"]["best_dev_spearman"] * 100 for c in runs)
        lines.append(f"| `{pooler}` | {len(runs)} | " + " | ".join(parts) + f" | {before:.1f} → {best:.1f} |")
    if not cells:
        return [
            *lines,
            "",
            "_No trained cells of this regime yet: the rows above are the untouched backbone._",
            "",
        ]
    if any("scifact_ndcg@10" not in c["scores"] for runs in cells.values() for c in runs):
        return [*lines, "", "_Some cells were evaluated on the STS tasks only: no verdicts._", ""]
    lines += ["", *standing(cells), *scifact_cls_against_mean(cells), *dev_from_the_backbone(cells)]
    lines += variant_legend(cells, regime)
    lines += [*against_untouched(cells, reference), *budget_check(cells, reference, others)]
    lines += [*below_step_zero(cells), *verdicts(cells)]
    lines += [*variant_verdicts(cells), "", *decomposition(cells)]
    return lines


def all_runs_table(grid: Grid) -> list[str]:
    columns = "backbone | regime | pooler | seed | steps | best dev step | Avg. (all) | Avg. (wmean)"
    lines, notes = [f"| {columns} | SciFact | train s | eval s | commit |"], []
    lines.append("|" + " --- |" * 12)
    for backbone in backbones(grid.results):
        for regime in REGIMES:
            for pooler, runs in load_cells(grid.cells_dir(backbone) / regime).items():
                for c in runs:
                    s = c["scores"]
                    lines.append(
                        f"| {backbone_name(backbone)} | {regime} | `{pooler}` | {c['seed']} | "
                        f"{c['train']['steps']} | {c['train']['best_step']} | "
                        f"{figure(s.get('avg_all'))} | {figure(s.get('avg_wmean'))} | "
                        f"{figure(s.get('scifact_ndcg@10'))} | "
                        f"{c['train_wall_seconds']:.0f} | {c['eval_wall_seconds']:.0f}"
                        f"{' (note)' if c.get('note') else ''} | {c['commit'][:10]} |"
                    )
                    if c.get("note"):
                        notes.append(f"- note on {regime} `{pooler}` seed {c['seed']}: {c['note']}")
    return [*lines, "", *notes] if notes else lines


def backbone_sections(grid: Grid, backbone: str, wording: Wording, gates: dict[str, dict]) -> list[str]:
    ref_file = grid.reference_file(backbone)
    reference = read_json_object(ref_file) if ref_file.exists() else None
    others = [
        read_json_object(path)
        for path in (grid.reference_file(backbone, p) for p in UNTOUCHED_POOLINGS[1:])
        if path.exists()
    ]
    name = backbone_title(backbone_name(backbone), wording)
    title = "" if backbone == BACKBONE else f"{name}: "
    note = BACKBONE_NOTES.get(backbone_name(backbone)) if wording.repository else None
    lines = [*([f"## {name}: the backbone", "", note, ""] if note else [])]
    for regime in REGIMES:
        lines += [f"## {title}{REGIME_TITLES[regime]}", ""]
        if gate_failed(gates, backbone, regime) and not load_cells(grid.cells_dir(backbone) / regime):
            lines += [
                f'_No grid in this regime: SimCSE did not pass its gate here ("{name}: the gate" below)._',
                "",
            ]
            continue
        lines += regime_section(grid, backbone, regime, reference, others, wording)
    return lines


def gate_failed(gates: dict[str, dict], backbone: str, regime: str) -> bool:
    """Whether issue 36's gate (budget_probe.py --rule gate; `read_gates`) failed for this backbone in
    this regime; a regime the gate did not try has not failed."""
    choice = gates.get(backbone_name(backbone))
    return choice is not None and not choice["regimes"].get(regime, {}).get("passed", True)


def gate_notes(found: list[str]) -> dict[str, str]:
    """The backbone notes for gate sections: only for backbones without a grid (a grid section has it)."""
    gridded = {backbone_name(b) for b in found}
    return {name: note for name, note in BACKBONE_NOTES.items() if name not in gridded}


def report_text(results: Path, wording: Wording | None = None) -> str:
    """The whole report of the grids in `results`."""
    wording = wording or user_wording(f"{results}/")
    grid = Grid(results, results / "work")
    found = backbones(results)
    gates = read_gates(results / "budget")
    others = [f"`{b}`" for b in found if b != BACKBONE]
    text = [
        *header(wording, others),
        *overview_tables(grid, found),
        *(line for backbone in found for line in backbone_sections(grid, backbone, wording, gates)),
        *gate_sections(results / "budget", gates, gate_notes(found) if wording.repository else {}),
        *attention_section(grid, found, wording),
        *geometry_section(results, wording),
        *rerun_section(grid, found, wording),
        "## Every run",
        "",
        *all_runs_table(grid),
        "",
    ]
    return "\n".join(text)


def write_report(results: Path, output: Path, wording: Wording | None = None) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report_text(results, wording), encoding="utf-8")
