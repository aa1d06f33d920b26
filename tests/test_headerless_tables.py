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


# --- the same for a dev set and for lwap eval ------------------------------------------------------------


def test_a_headerless_dev_file_is_read_with_eval_dev_column_names(tmp_path: Path) -> None:
    from lwap.train.config_schema import EvalConfig
    from lwap.train.dev_sets import load_dev_set

    dev = tmp_path / "stsb-en-dev.csv"
    dev.write_text(SCORED, encoding="utf-8")
    pairs = load_dev_set(EvalConfig(dev=str(dev), dev_column_names=NAMES)).data.subsets["pairs"]
    assert pairs.sentences1 == ["A plane is taking off.", "A man, a flute."] and pairs.scores == [5.0, 3.8]
    with pytest.raises(DataError, match=r"name its columns with eval\.dev_column_names\)$"):
        load_dev_set(EvalConfig(dev=str(dev)))
    with pytest.raises(ConfigError, match=r"dev_column_names is for a scored pairs dev file .* STS-B dev"):
        load_dev_set(EvalConfig(dev="stsb", dev_column_names=NAMES))


def test_lwap_eval_reads_a_headerless_pairs_file_by_its_named_columns(tmp_path: Path, capsys) -> None:
    from eval_mirror import fruit_model

    from lwap.cli import main

    pairs = tmp_path / "judged.tsv"  # an id column first, as SentEval's STS-B copies have genre, file, ...
    rows = [("apple", "apple", 3), ("apple", "apple apple banana", 2), ("apple", "apple banana", 0)]
    rows.append(("apple", "banana", 1))
    pairs.write_text("".join(f"{i}\t{a}\t{b}\t{s}\n" for i, (a, b, s) in enumerate(rows)), encoding="utf-8")
    fruit = tmp_path / "fruit"
    fruit_model().save(str(fruit))
    argv = ["eval", str(fruit), "--tasks", str(pairs), "--no-progress"]
    named = ["--pairs-column-names", "id", "sentence1", "sentence2", "score"]
    assert main([*argv, *named]) == 0
    assert "judged (pairs)" in capsys.readouterr().out  # scored as test_eval_cli's headed copy: 80.0
    for extra, says in [
        ([], "name its columns with --pairs-column-names)"),
        (["--pairs-column-names", "id", "a", "b", "score"], "missing column(s) 'sentence1', 'sentence2'; "
         "--pairs-column-names has 'id', 'a', 'b', 'score' (name yours with --pairs-columns)"),
        (["--pairs-column-names", *NAMES], "judged.tsv:1: expected 3 TSV fields as in --pairs-column-names, "
         "found 4"),
        (["--pairs-column-names", "a", "a"], "--pairs-column-names names a column twice"),
    ]:  # fmt: skip
        assert main([*argv, *extra]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and says in err[0], err
