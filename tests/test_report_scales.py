"""Issue 50's pre-registered reading of the levels' scales in docs/RESULTS.md
(benchmarks/grid/report_scales.py), in the four words: `lwap-levelnorm` − `lwap` equivalent everywhere →
"the scales do not matter"; a difference or undecided → the overview's verdicts read a second time with
`lwap-levelnorm` as LWAP; one seed → nothing read."""

from __future__ import annotations

from pathlib import Path

from test_compare_report import report_text, write_cell

from benchmarks.grid.report_repository import RepositoryReport

HEADING = "## Do the levels' scales matter? `lwap-levelnorm` against `lwap`"


def grid(tmp_path: Path, levelnorm: list[float], seeds: int = 3) -> str:
    """A supervised grid on one MLM backbone: `lwap`, `cls-mlp` and `lwap-levelnorm` cells (Avg. (all) as
    given; SciFact the Avg. less 20); returns RepositoryReport's page."""
    folder = tmp_path / "cells/backbones/mlm/sup"
    extra = {"regime": "sup", "backbone": "../models/mlm"}
    for seed in range(seeds):
        for row, avg in (
            ("lwap", 60.0 + 0.1 * seed),
            ("cls-mlp", 58.0 + 0.1 * seed),
            ("lwap-levelnorm", levelnorm[seed]),
        ):
            write_cell(folder, row, seed, avg, avg - 20.0, extra)
    return report_text(tmp_path, RepositoryReport)


def section(text: str) -> str:
    return text.split(HEADING)[1].split("\n## ")[0]


def test_a_levelnorm_row_equivalent_to_lwap_says_the_scales_do_not_matter(tmp_path: Path) -> None:
    text = grid(tmp_path, [60.1, 60.1, 60.3])  # d = +0.1, 0.0, +0.1: ± 4.303 × 0.058/√3 = 0.14, inside ±0.5
    found = section(text)
    assert "| mlm | supervised | 3 | +0.07 [-0.08, +0.21]: **equivalent** (Holm p 0.367) |" in found
    assert "Equivalent on every grid and metric: the levels' scales do not matter for the verdicts" in found
    assert "Read again" not in text and "Provisional" not in found
    assert text.index("## Does `lwap` beat the paper's baseline?") < text.index(HEADING)


def test_an_undecided_levelnorm_row_is_not_read_as_no_difference(tmp_path: Path) -> None:
    """The old rule called d = +0.2, −0.2, +0.1 level, hence "the scales do not matter"; its interval
    [-0.48, +0.55] reaches past +0.5, so on Avg. (all) it is undecided and the verdicts are read again.
    On SciFact (margin 1.0) the same interval is equivalent."""
    text = grid(tmp_path, [60.2, 59.9, 60.3])
    found = section(text)
    assert "| mlm | supervised | 3 | +0.03 [-0.48, +0.55]: undecided (Holm p 1.000) |" in found
    assert "| +0.03 [-0.48, +0.55]: **equivalent** (Holm p 1.000) |" in found
    assert "Undecided on mlm supervised Avg. (all): not settled at this n. So the verdicts are read" in found
    assert "### Read again with `lwap-levelnorm` as LWAP" in text


def test_a_levelnorm_row_above_lwap_reads_the_verdicts_a_second_time(tmp_path: Path) -> None:
    text = grid(tmp_path, [63.0, 63.1, 63.2])  # d = +3.0 at every seed: no spread, above
    found = section(text)
    assert "| mlm | supervised | 3 | +3.00 [+3.00, +3.00]: **above** (Holm p < 0.001) |" in found
    assert (
        "A difference on mlm supervised Avg. (all), mlm supervised SciFact nDCG@10: the scales" in found
    )
    again = text.split(
        "### Read again with `lwap-levelnorm` as LWAP: Does `lwap` beat the paper's baseline?"
    )[1]
    assert "| backbone | regime | against | seeds (lwap-levelnorm/other) |" in again
    # 63 − 58 at every seed; this table decides its comparisons, so Holm's p is beside the word
    assert "| mlm | supervised | `cls-mlp` | 3/3 | +5.00 [+5.00, +5.00]: **above** (Holm p < 0.001)" in again


def test_one_seed_reads_nothing_and_two_are_provisional(tmp_path: Path) -> None:
    assert "One seed on mlm supervised Avg. (all)" in section(grid(tmp_path / "one", [63.0], seeds=1))
    found = section(grid(tmp_path / "two", [60.2, 59.9], seeds=2))
    assert "_Provisional: 2 of 3 seeds in a grid._" in found


def test_no_levelnorm_cells_no_section(tmp_path: Path) -> None:
    write_cell(tmp_path / "cells/unsup", "lwap", 0, 60.0, 40.0)
    assert HEADING not in report_text(tmp_path, RepositoryReport)
