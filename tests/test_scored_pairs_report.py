"""Issue 67's scored pairs report (benchmarks/owntask/scored_pairs_stsb_report.py): cells read back, paired
by seed, each contrast's 95 % interval and its word; a missing cell leaves its rows "not run yet"."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.owntask.scored_pairs_stsb import ROWS, Layout, cells
from benchmarks.owntask.scored_pairs_stsb_report import write_report

SEEDS = (0, 1, 2)
STSB = {  # STS-B test by row and seed: lwap-mean follows st-cosent within hundredths; thresholded trails
    "st-cosent": [86.0, 86.4, 85.8],
    "lwap-mean": [86.01, 86.42, 85.79],
    "lwap-lwap": [87.0, 87.6, 86.9],
    "thresholded": [80.0, 81.5, 79.0],
}


def write_cell(layout: Layout, row: str, seed: int | None, stsb: float, avg: float) -> None:
    path = layout.cell(row, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"row": row, "seed": seed, "stsb_test": stsb, "sts": {"avg_all": avg}}))


def test_the_report_reads_the_cells_as_pre_registered(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "results", tmp_path / "work", None)
    assert cells(SEEDS)[0] == ("untouched", None) and len(cells(SEEDS)) == 1 + len(ROWS) * 3
    write_cell(layout, "untouched", None, 84.0, 78.0)
    for row, values in STSB.items():
        for seed, value in zip(SEEDS, values, strict=True):
            if (row, seed) != ("thresholded", 2):  # one cell not made yet
                write_cell(layout, row, seed, value, 70.0 + seed)
    text = write_report(layout.results, SEEDS)
    assert text == (layout.results / "REPORT.md").read_text(encoding="utf-8")
    lines = text.splitlines()

    def line(start: str, metric: int = 0) -> str:
        return [x for x in lines if x.startswith(start)][metric]

    assert "| untouched all-MiniLM-L6-v2 | 84.00 | 78.00 |" in lines
    assert line("| `st-cosent`: ").endswith("| 86.07 ± 0.31 | 71.00 ± 1.00 |")
    assert line("| `lwap-mean` − `st-cosent`").endswith("**equivalent** |")
    assert line("| `lwap-lwap` − `st-cosent`").endswith("| 3/3 | **above** |")
    assert "not run yet" in line("| `lwap-mean` − `thresholded`")
    assert "not run yet" in line("| `thresholded`: ")
    assert line("| `lwap-lwap` − untouched").endswith("**above** |")
    assert line("| `st-cosent` − untouched", 1).endswith("**below by more than the margin** |")  # Avg. (all)
