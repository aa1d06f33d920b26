"""The repository's own report, docs/RESULTS.md: `lwap compare`'s generic report of the cells in
benchmarks/results/compare/, with the study's rows (study.py) and what belongs to these experiments
added through its hooks: the prose and backbone notes (report_prose), the overview across the backbones
(report_overview) after the budget test's primary table (verdict_report), what the four words change
(report_changes), issue 50's reading of the levels' scales (report_scales), the study's readings of
each grid (report_verdicts: issue 12's target, SciFact by what a pooler reads), issue 37's decomposition
(report_decomposition), issue 36's gates (report_gates), the geometry of the grids retrained for it
(report_geometry), issue 51's elastic frontier (benchmarks/elastic/frontier_report) and what a re-run
reproduces (report_reruns).

`python benchmarks/grid/compare_poolers.py report` writes it; a test checks it reproduces docs/RESULTS.md.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from benchmarks.grid import report_geometry
from benchmarks.grid.report_changes import changes_section
from benchmarks.grid.report_decomposition import decomposition
from benchmarks.grid.report_gates import gate_failed, gate_notes, gate_sections, read_gates
from benchmarks.grid.report_overview import load_grids, overview_tables
from benchmarks.grid.report_prose import BACKBONE_NOTES, BACKBONE_TITLES, INTRO, NO_OTHER_BACKBONE, WORDING
from benchmarks.grid.report_reruns import rerun_section
from benchmarks.grid.report_scales import scales_section
from benchmarks.grid.report_verdicts import row_label, scifact_cls_against_mean, variant_verdicts
from benchmarks.grid.study import ROWS, paper_baseline
from lwap.compare.cells import load_cells
from lwap.compare.geometry import Panel
from lwap.compare.prose import other_backbones_line
from lwap.compare.report import Cells, Report
from lwap.compare.rows import Rows


class RepositoryReport(Report):
    """docs/RESULTS.md: the generic report, worded as the repository's, with its own sections."""

    def __init__(self, results: Path, rows: Rows | None = None) -> None:
        super().__init__(results, WORDING, rows or ROWS)

    @cached_property
    def gates(self) -> dict[str, dict]:
        """Each gated backbone's choice (budget/NAME/choice.json), read once for the whole report."""
        return read_gates(self.results / "budget")

    def intro(self) -> str:
        return INTRO

    def backbones_line(self, others: list[str]) -> str | None:
        return other_backbones_line(others) or NO_OTHER_BACKBONE.format(prog=self.wording.prog)

    def overview(self) -> list[str]:
        """The budget test's primary table, then the 3-seed grids' overview, what the four words change
        and the levels' scales."""
        from benchmarks.grid.verdict_report import results_section

        grids = load_grids(self.grid, self.found)  # read once for every section
        tables, shown = overview_tables(grids, self.grid_link)
        budget = results_section(self.results.parent / "verdicts")
        return [*budget, *tables, *(changes_section(shown, grids) if tables else []), *scales_section(grids)]

    def backbone_title(self, name: str) -> str:
        return BACKBONE_TITLES.get(name, name)

    def backbone_note(self, name: str) -> str | None:
        return BACKBONE_NOTES.get(name)

    def withheld(self, backbone: str, regime: str, title: str) -> list[str]:
        """A regime whose gate failed, and which has no cells, has no grid section: it says why."""
        cells = load_cells(self.grid.cells_dir(backbone) / regime, self.rows.order)
        if not gate_failed(self.gates, backbone, regime) or cells:
            return []
        return [
            f'_No grid in this regime: SimCSE did not pass its gate here ("{title}: the gate" below)._',
            "",
        ]

    def baseline(self, cells: Cells) -> str:
        return paper_baseline(cells)

    def row_label(self, row: str, cells: Cells) -> str:
        return row_label(row, cells)

    def after_standing(self, cells: Cells) -> list[str]:
        return scifact_cls_against_mean(cells)

    def after_verdicts(self, cells: Cells) -> list[str]:
        return [*variant_verdicts(cells), *decomposition(cells)]

    def after_backbones(self) -> list[str]:
        return gate_sections(self.results / "budget", self.gates, gate_notes(self.found))

    def attention_notes(self) -> list[str]:
        return [
            "`retrained` marks profiles measured on a retrain of the cell "
            f"(`{self.wording.short} reprofile`).",
            "Where the same heads start, before training: [ATTENTION_AT_INIT.md](ATTENTION_AT_INIT.md)",
            "(`python benchmarks/grid/lwap_attention_at_init.py`).",
        ]

    def geometry_panels(self) -> list[Panel]:
        return report_geometry.panels(self.results, self.rows)

    def geometry_notes(self, found: list[Panel]) -> list[str]:
        return report_geometry.retrained_notes(found, self.wording)

    def after_geometry(self) -> list[str]:
        return [*self.elastic_section(), *rerun_section(self.grid, self.found)]

    def elastic_section(self) -> list[str]:
        """Issue 51's frontier, its primary reading per grid (benchmarks/elastic/frontier_report.py); the
        links are docs/RESULTS.md's (the figure only once `frontier.py report` has drawn it)."""
        from benchmarks.elastic.frontier_report import results_section

        docs = self.results.parents[2] / "docs"  # benchmarks/results/compare -> the repository root
        figure = "elastic_frontier.png" if (docs / "elastic_frontier.png").is_file() else None
        return results_section(
            self.results.parent / "elastic", "../benchmarks/results/elastic/REPORT.md", figure
        )
