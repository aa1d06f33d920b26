"""A grid's rows (lwap.compare.rows): the registry's poolers by default, a rows file's rows added (the
repository study's: configs/compare/rows/study.yaml), each setting filled per regime, one-line errors
naming the file and key; what a cell keeps of its run's summary; and the engine holding no study."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

from lwap.compare.rows import load_rows, resolve_rows
from lwap.compare.runner import kept_training
from lwap.config_files import shipped_configs
from lwap.errors import ConfigError
from lwap.registry import POOLINGS


def test_the_default_rows_are_the_registrys_poolers_with_simcses_untouched_rows() -> None:
    rows = load_rows()
    assert rows.order == rows.planned == POOLINGS  # a pooler added to the registry is a row of every grid
    assert all(rows.pooling_of(name) == name and rows.overrides(name, "unsup") == [] for name in POOLINGS)
    assert rows.seeds == (0, 1, 2) and rows.figure == ("lwap",) and rows.groups == ()
    assert list(rows.untouched)[:2] == ["mean", "cls"] and len(rows.untouched) == 3
    assert rows.pooling_of("not-a-row") == "not-a-row"  # a cell of an unknown row: named by its file


def test_the_study_rows_file_adds_its_rows_in_its_order_and_fills_settings_per_regime() -> None:
    study = load_rows("study")
    assert resolve_rows("study") == REPO / "configs/compare/rows/study.yaml"  # a shipped file, by name
    assert set(POOLINGS) <= set(study.order)  # every registry pooler is a row, beside the study's own
    assert study.planned == ("lwap", "weighted", "cls", "mean", "first_last_avg", "last2_avg")
    assert study.pooling_of("cls-mlp") == "cls" and study.pooling_of("lwap-levelnorm") == "lwap"
    assert study.overrides("lwap-warmup", "unsup") == ["training.head_warmup_steps=50"]
    assert study.overrides("lwap-all", "sup")[-1] == "training.head_warmup_steps=33"
    assert study.group("components").rows[0] == "lwap-attn" and "lwap-levelnorm" in study.figure
    assert study.untouched == load_rows().untouched  # the default file's, kept where the study says none
    assert [g.name for g in study.legend_groups()] == ["native", "components", "scales", "simcse"]


def test_a_rows_file_is_not_a_training_config() -> None:
    assert not [name for name in shipped_configs() if name.startswith("compare/rows")]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rows.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[lwap]\n", "expected a mapping with keys planned, seeds"),
        ("rows: {mean: {set: [training.seed=1]}}\n", "rows.mean: a registry pooler; a row with settings"),
        ("rows: {x: {pooling: lwap, set: [nothing]}}\n", "rows.x.set: 'nothing': expected KEY=VALUE"),
        ("rows: {x: {pooling: lwap, set: ['k={nope}']}}\n", "rows.x.set: {nope} is not one of regime_values"),
        ("rows: {x: {pooling: lwap, sets: []}}\n", "rows.x: expected a mapping of `pooling` and `set`"),
        ("rows: {x/y: {pooling: lwap}}\n", "row name 'x/y'"),
        ("regime_values: {w: {unsup: 1}}\n", "regime_values.w: expected a value for each regime"),
        ("planned: [lwap, nope]\n", "planned: unknown value 'nope'"),
        ("figure: [nope]\n", "figure: unknown value 'nope'"),
        ("seeds: [0, -1]\n", "seeds: expected a list of seeds"),
        ("untouched: {cls: '[CLS]'}\n", "untouched: expected a mapping of poolings to labels, `mean` first"),
        ("groups: [{name: a, title: A, rows: [nope]}]\n", "groups[0]: unknown value 'nope'"),
    ],
)
def test_a_wrong_rows_file_is_one_line_naming_its_file_and_key(tmp_path: Path, text: str, message: str):
    with pytest.raises(ConfigError) as error:
        load_rows(write(tmp_path, text))
    assert str(error.value).startswith(str(tmp_path / "rows.yaml")) and message in str(error.value)
    assert "\n" not in str(error.value)


def test_kept_training_names_the_summarys_stsb_dev_scores_as_cells_always_have() -> None:
    """Cells keep STS-B dev under the names they have always had (`best_dev_spearman`, ...), read from the
    summary's names of today (`best_dev_score`, ...), and the checkpoint a resumed run started from; a run
    with another dev set keeps no dev scores."""
    summary = {
        "steps": 30,
        "dev_set": "STS-B dev",
        "dev_metric_key": "eval_stsb-dev_spearman_cosine",
        "dev_score_before": 0.5,
        "best_dev_score": 0.7,
        "best_step": 20,
        "dev_scores_by_step": [[0, 0.5], [20, 0.7]],
        "dev_geometry_by_step": [[0, -1.0, 0.2]],
        "resumed_from": "out/checkpoints/checkpoint-10",
    }
    assert kept_training(summary) == {
        "steps": 30,
        "dev_spearman_before": 0.5,
        "best_dev_spearman": 0.7,
        "best_step": 20,
        "dev_spearman_by_step": [[0, 0.5], [20, 0.7]],
        "dev_geometry_by_step": [[0, -1.0, 0.2]],
        "resumed_from": "out/checkpoints/checkpoint-10",  # a resumed cell: its comparisons are flagged
    }
    other = {**summary, "dev_set": "my.csv (scored pairs)", "dev_metric_key": "eval_dev_spearman_cosine"}
    kept = kept_training(other)
    assert (kept["best_dev_spearman"], kept["dev_spearman_by_step"], kept["best_step"]) == (None, [], 20)


def test_the_engine_holds_no_study() -> None:
    """compare/ names no pooler only the registry knows by name (it reads POOLINGS), no row of the
    repository's study and no issue: those are configs/compare/rows/ and benchmarks/grid/'s."""
    names = {"weighted", "first_last_avg", "last2_avg", "all_levels_avg"} | set(load_rows("study").order)
    names -= {"lwap", "cls", "mean"}
    found = []
    for path in sorted((REPO / "compare").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        strings = [n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)]
        found += [f"{path.name}: {s!r}" for s in strings if isinstance(s, str) and names & set(words(s))]
        found += [f"{path.name}: cites an issue" for line in text.splitlines() if "issue" in line.lower()]
    assert not found


def words(text: str) -> list[str]:
    import re

    return re.findall(r"[A-Za-z0-9_][A-Za-z0-9_-]*", text)
