"""benchmarks/grid/report_gates.py: a backbone's gate (and its diagnosis) in the repository's report, copied
from the files the gate wrote; a probe's choice (issue 26's rule) is not a gate and gets no section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.grid.report_gates import gate_failed, gate_notes, gate_sections, read_gates, table_lines
from lwap.errors import DataError

README = """# Budget probe: bert-new

Made by ...

Untouched rows, Avg. (all): `mean` 46.43, `cls` 38.22.
Untouched rows, SciFact nDCG@10 (not part of the rule): `mean` 14.76.

| regime | budget | --set | trained `cls` | trained `mean` | bar |
| --- | --- | --- | --- | --- | --- |
| unsup | `long` | x | 40.32 | 47.30 | no |

Chosen, and the grid's command:
"""
DIAGNOSIS = """# The gate's diagnosis

Untouched rows ...

| run | `cls` Avg. (all) | x | `mean` Avg. (all) | y | both clear it |
| --- | --- | --- | --- | --- | --- |
| the control | 41.00 | a | 47.00 | b | no |
"""


def sections(budget_root: Path, notes: dict[str, str]) -> list[str]:
    return gate_sections(budget_root, read_gates(budget_root), notes)


def write_gate(folder: Path, rule: str, passed: bool) -> None:
    folder.mkdir(parents=True)
    regimes = {"unsup": {"budget": "lr1e-4-long", "passed": passed, "set": []}}
    choice = {"rule": rule, "backbone": f"benchmarks/backbones/{folder.name}", "regimes": regimes}
    (folder / "choice.json").write_text(json.dumps(choice), encoding="utf-8")
    (folder / "README.md").write_text(README, encoding="utf-8")


def test_a_failed_gate_brings_its_table_outcome_and_diagnosis(tmp_path: Path) -> None:
    write_gate(tmp_path / "bert-new", "gate", passed=False)
    (tmp_path / "bert-new" / "DIAGNOSIS.md").write_text(DIAGNOSIS, encoding="utf-8")
    write_gate(tmp_path / "bert-old", "probe", passed=False)
    text = "\n".join(sections(tmp_path, {"bert-new": "The note."}))
    assert text.count("## ") == 1 and text.startswith("## bert-new: the gate\n\nThe note.")
    assert "| unsup | `long` | x | 40.32 | 47.30 | no |" in text and "Chosen" not in text
    assert "SciFact nDCG@10 (not part of the rule)" in text
    assert "unsupervised: `lr1e-4-long` **failed**. **No grid is run on this backbone**" in text
    assert text.rstrip().endswith("| the control | 41.00 | a | 47.00 | b | no |")


def test_the_experiments_readings_follow_the_diagnosis_table(tmp_path: Path) -> None:
    """Issue 50's two causes, tested: DIAGNOSIS.md's reading lines, after its table and nothing else."""
    write_gate(tmp_path / "bert-new", "gate", passed=False)
    tested = "- (b) S is 2 points above W: part of the cause.\n- (a) Dropout adaptation: not read yet."
    text = DIAGNOSIS + "\n## The two untested causes, tested\n\nIntro.\n\n" + tested + "\n\nWhat follows.\n"
    (tmp_path / "bert-new" / "DIAGNOSIS.md").write_text(text, encoding="utf-8")
    section = "\n".join(sections(tmp_path, {}))
    assert section.rstrip().endswith(tested) and "Intro." not in section and "What follows" not in section
    assert "benchmarks/results/compare/budget/bert-new/experiments/EXPERIMENTS.md" in section


def test_a_gate_passed_in_one_regime_stops_only_the_other(tmp_path: Path) -> None:
    write_gate(tmp_path / "bert-new", "gate", passed=False)
    choice_file = tmp_path / "bert-new" / "choice.json"
    choice = json.loads(choice_file.read_text())
    choice["regimes"]["sup"] = {"budget": "long", "passed": True, "set": []}
    choice_file.write_text(json.dumps(choice), encoding="utf-8")
    text = "\n".join(sections(tmp_path, {}))
    assert "supervised: `long` **passed**" in text
    assert "**No unsupervised grid** until its cause is found; the supervised grid runs under `long`." in text


def test_a_passed_gate_has_no_stop_line_and_no_folder_means_no_section(tmp_path: Path) -> None:
    write_gate(tmp_path / "bert-new", "gate", passed=True)
    text = "\n".join(sections(tmp_path, {}))
    assert "**passed**" in text and "No grid" not in text and "diagnosis" not in text
    assert sections(tmp_path / "none", {}) == []


def test_table_lines_stop_after_the_table(tmp_path: Path) -> None:
    path = tmp_path / "f.md"
    path.write_text("a\nstart\n\n| 1 |\n| 2 |\nafter\n| 3 |\n", encoding="utf-8")
    assert table_lines(path, "start") == ["start", "", "| 1 |", "| 2 |"]
    assert table_lines(path, "missing") == []


def test_a_damaged_choice_is_one_error_naming_the_file(tmp_path: Path) -> None:
    write_gate(tmp_path / "bert-new", "gate", passed=False)
    (tmp_path / "bert-new" / "choice.json").write_text('{"rule": "gate", ', encoding="utf-8")
    with pytest.raises(DataError, match=r"choice\.json"):
        sections(tmp_path, {})


def test_a_backbone_with_a_grid_keeps_its_note_in_the_grid_section_only() -> None:
    assert "bert-prenorm-4l256-sentences" in gate_notes(["benchmarks/backbones/bert-mlm-4l256"])
    assert "bert-prenorm-4l256-sentences" not in gate_notes(
        ["benchmarks/backbones/bert-prenorm-4l256-sentences"]
    )


def test_a_regime_whose_gate_failed_is_named_so_in_the_grid_sections(tmp_path: Path) -> None:
    write_gate(tmp_path / "budget" / "bert-new", "gate", passed=False)
    gates = read_gates(tmp_path / "budget")
    assert gate_failed(gates, "benchmarks/backbones/bert-new", "unsup")
    assert not gate_failed(gates, "benchmarks/backbones/bert-new", "sup")  # not in the choice: not failed
    assert not gate_failed(gates, "benchmarks/backbones/other", "unsup")  # no gate at all
