"""A CSV/TSV without a header row (data.column_names): the STS-B files of the data mirror and SentEval's
copies have none. The first line is data; every other source names its own columns and is refused with
the key; a file read as if it had a header says how to name its columns."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_train_formats import train_error

from lwap.errors import ConfigError, DataError
from lwap.train.config import DataConfig, config_from_dict
from lwap.train.data import load_train_dataset

SCORED = 'A plane is taking off.,An air plane is taking off.,5.0\n"A man, a flute.",A man plays.,3.8\n'
NAMES = ["sentence1", "sentence2", "score"]


def test_the_first_line_is_data_when_column_names_name_the_columns(tmp_path: Path) -> None:
    scored = tmp_path / "stsb-en-train.csv"
    scored.write_text(SCORED, encoding="utf-8")
    data = DataConfig(train=str(scored), column_names=NAMES, score_range=[0, 5])
    rows = load_train_dataset(data, "scored_pairs")
    assert rows["sentence1"] == ["A plane is taking off.", "A man, a flute."]
    assert rows["score"] == [1.0, pytest.approx(0.76)]
    # TSV, columns picked by name in another order than the file's, one column unread
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("7\tq1\td1\n8\tq2\td2\n", encoding="utf-8")
    data = DataConfig(
        train=str(pairs), column_names=["id", "doc", "query"], anchor_column="query",
        positive_column="doc", hard_negative_column=None,
    )  # fmt: skip
    rows = load_train_dataset(data, "sup_simcse")
    assert rows["anchor"] == ["d1", "d2"] and rows["positive"] == ["q1", "q2"]


def test_the_same_file_without_the_key_is_refused_with_the_key_named(
    tmp_path: Path, tiny_bert: Path, capsys
) -> None:
    scored = tmp_path / "s.csv"
    scored.write_text(SCORED, encoding="utf-8")
    line = train_error(
        tmp_path, tiny_bert, capsys, {"train": str(scored), "score_range": [0, 5]}, objective="scored_pairs"
    )
    assert "missing column(s) 'sentence1', 'sentence2', 'score'" in line, line
    assert line.endswith("name its columns with data.column_names)"), line


@pytest.mark.parametrize(
    ("content", "names", "says"),
    [
        ("a,b\n", NAMES, "s.csv:1: expected 3 CSV fields as in data.column_names"),
        ("a,b,1\n", ["text1", "text2", "score"], "missing column(s) 'sentence1', 'sentence2'; "
         "data.column_names has 'text1', 'text2', 'score'"),
        ("a,b,x\n", NAMES, "s.csv:1: score 'x' (score) is not a number"),
    ],
)  # fmt: skip
def test_rows_against_the_named_columns_are_one_line(
    content: str, names: list[str], says: str, tmp_path: Path, tiny_bert: Path, capsys
) -> None:
    scored = tmp_path / "s.csv"
    scored.write_text(content, encoding="utf-8")
    data = {"train": str(scored), "column_names": names, "score_range": [0, 5]}
    line = train_error(tmp_path, tiny_bert, capsys, data, objective="scored_pairs")
    assert says in line, line


def test_a_source_that_names_its_own_columns_refuses_the_key(tmp_path: Path) -> None:
    lines = tmp_path / "p.jsonl"
    lines.write_text('{"sent0": "a", "sent1": "b"}\n', encoding="utf-8")
    for train in (str(lines), "someone/a-hub-dataset"):
        data = DataConfig(train=train, column_names=["sent0", "sent1"], hard_negative_column=None)
        with pytest.raises(DataError, match=r"data\.column_names is for a CSV/TSV file without a header"):
            load_train_dataset(data, "sup_simcse")


@pytest.mark.parametrize(("names", "says"), [([], "must list the file's columns"), (["a", " "], "none empty"),
                                             (["a", "b", "a"], "names a column twice")])  # fmt: skip
def test_column_names_are_checked_with_the_config(names: list[str], says: str) -> None:
    raw = {
        "output": {"dir": "run"},
        "model": {"backbone": "b", "pooling": "mean"},
        "data": {"train": "t.csv", "column_names": names},
        "objective": {"name": "unsup_simcse"},
    }
    with pytest.raises(ConfigError, match=rf"data\.column_names .*{says}"):
        config_from_dict(raw, "c.yaml")
