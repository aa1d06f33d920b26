"""The comparison as Markdown, from the cell files alone: per backbone and regime a table (mean ± std
over seeds) and the verdicts, the attention and geometry sections, and every run listed.

`Report` is the generic report `lwap compare report` writes for any results folder. Its hooks (its
methods that add nothing here) are the seam where a report of one's own adds sections and prose; the
repository's report (benchmarks/grid/report_repository.py) adds its backbone notes, gates, overview,
decomposition and re-runs there. The engine never imports it: the installed package has no benchmarks/.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

from lwap.checks.files import read_json_object
from lwap.compare import settings
from lwap.compare.attention import attention_section
from lwap.compare.cells import load_cells, shared_overrides
from lwap.compare.geometry import Panel, panels
from lwap.compare.geometry_section import geometry_section
from lwap.compare.grid import (
    BACKBONE,
    REGIME_TITLES,
    REGIMES,
    STS_COLUMNS,
    STS_LABELS,
    Grid,
    backbone_name,
    backbones,
)
from lwap.compare.prose import GENERIC_INTRO, Wording, anchor, header, other_backbones_line, user_wording
from lwap.compare.rows import Rows, load_rows
from lwap.compare.summaries import dev_from_the_backbone
from lwap.compare.verdicts import (
    against_untouched,
    below_step_zero,
    budget_check,
    mean_std,
    standing,
    variant_legend,
    verdicts,
)

Cells = dict[str, list[dict[str, Any]]]

COLUMNS = [
    *zip(STS_COLUMNS, STS_LABELS, strict=True),
    ("avg_all", "Avg. (all)"),
    ("avg_wmean", "Avg. (wmean)"),
    ("scifact_ndcg@10", "SciFact nDCG@10"),
]


def grid_status(regime: str, cells: Cells, backbone: str, wording: Wording, rows: Rows) -> str:
    """How much of the planned grid (the planned rows × seeds) is done, and its cost per cell."""
    done = sum(len(runs) for pooler, runs in cells.items() if pooler in rows.planned)
    planned = len(rows.planned) * len(rows.seeds)
    minutes = [
        (c["train_wall_seconds"] + c["eval_wall_seconds"]) / 60
        for pooler, runs in cells.items()
        if pooler in rows.planned
        for c in runs
    ]
    status = f"Grid: {done} of {planned} planned cells ({len(rows.planned)} poolers × seeds "
    status += ", ".join(map(str, rows.seeds)) + ")"
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


def continue_command(regime: str, cells: Cells, backbone: str, wording: Wording) -> str:
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


class Report:
    """The report of the grids in one results folder. The hooks below give the generic report's prose and
    panels and add nothing else; a subclass overrides them to add its own sections and prose, in the
    places `text` calls them."""

    def __init__(self, results: Path, wording: Wording | None = None, rows: Rows | None = None) -> None:
        self.results = results
        self.wording = wording or user_wording(f"{results}/")
        self.grid = Grid(results, results / "work")
        self.rows = rows or load_rows()

    @cached_property
    def found(self) -> list[str]:
        """The backbones with cells, the default one first (read once: every section lists them)."""
        return backbones(self.results)

    # -- hooks: what a report of one's own adds (each returns nothing in the generic report) --

    def intro(self) -> str:
        """The paragraphs after the opening lines: what the grids are."""
        return GENERIC_INTRO

    def backbones_line(self, others: list[str]) -> str | None:
        """The line naming the backbones besides the default one (`others`, quoted), if any."""
        return other_backbones_line(others)

    def overview(self) -> list[str]:
        """Sections before the backbones' own (e.g. one question answered across every backbone)."""
        return []

    def backbone_title(self, name: str) -> str:
        """What a backbone's sections are called (its folder name here)."""
        return name

    def backbone_note(self, name: str) -> str | None:
        """A paragraph on what the backbone is, in a "NAME: the backbone" section before its grids."""
        return None

    def withheld(self, backbone: str, regime: str, title: str) -> list[str]:
        """Lines standing in for a regime's section where its grid was deliberately not run."""
        return []

    def baseline(self, cells: Cells) -> str:
        """The row `lwap`'s standing is read against: the paper's baseline, `cls`."""
        return "cls"

    def row_label(self, row: str, cells: Cells) -> str:
        """A row as its grid's table names it."""
        return f"`{row}`"

    def after_standing(self, cells: Cells) -> list[str]:
        """More readings of one grid, after `lwap`'s standing."""
        return []

    def after_verdicts(self, cells: Cells) -> list[str]:
        """More readings of one grid, after its verdicts."""
        return []

    def after_backbones(self) -> list[str]:
        """Sections after every backbone's grids."""
        return []

    def attention_notes(self) -> list[str]:
        """Lines at the end of the attention section's introduction."""
        return []

    def geometry_panels(self) -> list[Panel]:
        """The geometry section's and figure's panels: each grid's own cells."""
        return panels(self.results, self.rows)

    def geometry_notes(self, found: list[Panel]) -> list[str]:
        """Lines at the end of the geometry section's introduction (e.g. on panels measured elsewhere)."""
        return []

    def after_geometry(self) -> list[str]:
        """Sections after the geometry section, before the list of every run."""
        return []

    # -- the report --

    def regime_section(
        self, backbone: str, regime: str, reference: dict[str, Any] | None, others: list[dict[str, Any]]
    ) -> list[str]:
        cells = load_cells(self.grid.cells_dir(backbone) / regime, self.rows.order)
        if not cells and not reference:
            return [f"_No cells of the `{regime}` regime yet._", ""]
        lines = [grid_status(regime, cells, backbone, self.wording, self.rows), ""]
        budget = shared_overrides(cells)
        if budget:
            listed = ", ".join(f"`{o}`" for o in budget)
            lines += [f"Settings beyond `{REGIMES[regime]}`: {listed}", ""]
        lines += settings.grid_flag([c for runs in cells.values() for c in runs])
        lines += score_table(cells, reference, others, lambda row: self.row_label(row, cells))
        if not cells:
            return [
                *lines,
                "",
                "_No trained cells of this regime yet: the rows above are the untouched backbone._",
                "",
            ]
        if any("scifact_ndcg@10" not in c["scores"] for runs in cells.values() for c in runs):
            return [*lines, "", "_Some cells were evaluated on the STS tasks only: no verdicts._", ""]
        lines += ["", *standing(cells, self.rows, self.baseline(cells)), *self.after_standing(cells)]
        lines += [*dev_from_the_backbone(cells), *variant_legend(cells, regime, self.rows)]
        lines += [*against_untouched(cells, reference), *budget_check(cells, reference, others, self.rows)]
        lines += [*below_step_zero(cells), *verdicts(cells, self.rows), "", *self.after_verdicts(cells)]
        return lines

    def regime_heading(self, backbone: str, regime: str) -> str:
        """A grid's section heading: the regime, after the backbone's title for any but the default."""
        name = self.backbone_title(backbone_name(backbone))
        return REGIME_TITLES[regime] if backbone == BACKBONE else f"{name}: {REGIME_TITLES[regime]}"

    def grid_link(self, backbone: str, regime: str) -> str:
        """A link to a grid's section, where its comparisons are decided."""
        return f"[its grid](#{anchor(self.regime_heading(backbone, regime))})"

    def backbone_sections(self, backbone: str) -> list[str]:
        ref_file = self.grid.reference_file(backbone)
        reference = read_json_object(ref_file) if ref_file.exists() else None
        others = [
            read_json_object(path)
            for path in (self.grid.reference_file(backbone, p) for p in list(self.rows.untouched)[1:])
            if path.exists()
        ]
        name = self.backbone_title(backbone_name(backbone))
        note = self.backbone_note(backbone_name(backbone))
        lines = [*([f"## {name}: the backbone", "", note, ""] if note else [])]
        for regime in REGIMES:
            lines += [f"## {self.regime_heading(backbone, regime)}", ""]
            withheld = self.withheld(backbone, regime, name)
            lines += withheld or self.regime_section(backbone, regime, reference, others)
        return lines

    def text(self) -> str:
        """The whole report."""
        others = [f"`{b}`" for b in self.found if b != BACKBONE]
        geometry = self.geometry_panels()
        text = [
            *header(self.wording, self.intro(), self.backbones_line(others)),
            *self.overview(),
            *(line for backbone in self.found for line in self.backbone_sections(backbone)),
            *self.after_backbones(),
            *attention_section(self.grid, self.found, self.rows, self.wording, self.attention_notes()),
            *geometry_section(geometry, self.wording, self.geometry_notes(geometry)),
            *self.after_geometry(),
            "## Every run",
            "",
            *all_runs_table(self.grid, self.rows),
            "",
        ]
        return "\n".join(text)


def score_table(
    cells: Cells,
    reference: dict[str, Any] | None,
    others: list[dict[str, Any]],
    label: Callable[[str], str] = lambda row: f"`{row}`",
) -> list[str]:
    """One grid's table: the untouched rows, then each row's mean ± std over seeds (named by `label`)."""
    header_row = "| pooler | seeds | " + " | ".join(label for _, label in COLUMNS) + " | dev before → best |"
    lines = [header_row, "|" + " --- |" * (len(COLUMNS) + 3)]
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
        dev = f"{before:.1f} → {best:.1f}"
        lines.append(f"| {label(pooler)} | {len(runs)} | " + " | ".join(parts) + f" | {dev} |")
    return lines


def all_runs_table(grid: Grid, rows: Rows) -> list[str]:
    columns = "backbone | regime | pooler | seed | steps | best dev step | Avg. (all) | Avg. (wmean)"
    lines, notes = [f"| {columns} | SciFact | train s | eval s | commit |"], []
    lines.append("|" + " --- |" * 12)
    for backbone in backbones(grid.results):
        for regime in REGIMES:
            for pooler, runs in load_cells(grid.cells_dir(backbone) / regime, rows.order).items():
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


def write_report(report: Report, output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report.text(), encoding="utf-8")
