"""benchmarks/baselines/quickstart_table.py's table, against README.md's quick-start table (the runs
themselves take ~15 minutes: the lead runs them, `python benchmarks/baselines/quickstart_table.py`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from benchmarks.baselines import quickstart_table as qt

REPO = Path(__file__).resolve().parents[1]

README = (REPO / "README.md").read_text(encoding="utf-8")
# `lwap eval sentence-transformers/all-MiniLM-L6-v2` (fp32), kept in the repository
BACKBONE_RESULTS = json.loads((REPO / "benchmarks/results/eval-minilm/mean/results.json").read_text())


def test_readme_table_has_the_script_header_and_its_two_rows() -> None:
    rows = qt.readme_table(README)
    assert len(rows) == 2
    assert rows[0].startswith(f"| {qt.BACKBONE_LABEL} |")
    assert rows[1].startswith("| quick start, native start (kept checkpoint: step ")
    assert all(len(qt.cells(row)) == len(qt.cells(qt.HEADER)) for row in rows)


def test_the_backbone_row_is_readme_s_from_its_eval_results() -> None:
    """The same eval results give README's row, character for character (format, rounding, average)."""
    dev = float(qt.cells(qt.readme_table(README)[0])[1])
    assert qt.table_row(qt.BACKBONE_LABEL, dev, BACKBONE_RESULTS) == qt.readme_table(README)[0]


# README's table as measured on 2026-12-01, before issue 38 (what a re-measure is compared against)
README_OF_2026_12_01 = "\n".join(
    [
        "| model | STS-B dev | STS12 | STS13 | STS14 | STS15 | STS16 | STS-B | SICK-R | Avg. (7 STS) "
        "| SciFact nDCG@10 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| untouched all-MiniLM-L6-v2 (its mean pooling) | 0.8673 | 72.37 | 80.60 | 75.59 | 85.39 | 78.99 "
        "| 82.03 | 77.15 | 78.87 | 64.51 |",
        "| quick start, native start (kept checkpoint: step 200) | 0.8728 | 72.09 | 81.81 | 77.25 | 85.80 "
        "| 80.69 | 82.72 | 72.32 | 78.95 | 62.62 |",
    ]
)


def test_report_names_what_changed_and_what_it_ran_on() -> None:
    readme = README_OF_2026_12_01
    quickstart = copy.deepcopy(BACKBONE_RESULTS)
    quickstart["sts"]["sickr"]["score"] = 72.3213
    summary = {"dev_score_before": 0.86731, "final_model_step": 150, "final_model_dev_score": 0.87423}
    record = {
        "date": "2026-12-04T00:00:00+0000",
        "machine": {
            "torch_threads": 2,
            "cores": 2,
            "torch": "2.13.0+cpu",
            "transformers": "5.25.0",
            "sentence_transformers": "6.3.0",
            "lwap": "0.1.0",
        },
        "load_average_before": [0.1],
        "load_average_after": [1.9],
        "seconds": {"train": 262.0},
        "train": {"data": "$LWAP_DATA_DIR/wiki/wiki_sentences_1m.txt.gz"},
        "fp32_dev_spearman": {"quickstart": 0.8739, "backbone": 0.8673},
    }
    text = qt.report(record, summary, {"quickstart": quickstart, "backbone": BACKBONE_RESULTS}, readme)
    lines = text.splitlines()
    assert lines[:2] == [qt.HEADER, qt.SEPARATOR]
    assert lines[2] == qt.readme_table(readme)[0]  # the backbone row: unchanged
    assert lines[3].startswith("| quick start, native start (kept checkpoint: step 150) | 0.8742 |")
    assert "2 torch threads on 2 CPUs" in text and "quickstart 0.8739" in text
    assert record["against_readme"]["backbone"] == "same"
    change = record["against_readme"]["quickstart"]
    assert "label 'quick start, native start (kept checkpoint: step 200)'" in change
    assert "STS-B dev 0.8728 → 0.8742" in change and "SICK-R 72.32" not in change  # 72.32 both


def test_a_partial_eval_is_refused() -> None:
    partial = copy.deepcopy(BACKBONE_RESULTS)
    del partial["search"]["scifact"]
    with pytest.raises(ValueError, match="lack scifact"):
        qt.table_row("x", 0.5, partial)
