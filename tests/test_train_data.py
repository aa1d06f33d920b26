"""Training data: text and CSV readers, the real mirror files, and bad input named by file and line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from lwap.errors import DataError
from lwap.paths import data_dir
from lwap.train.config import DataConfig
from lwap.train.data import load_train_dataset

TRIPLETS = (
    "sent0,sent1,hard_neg,split\n"
    "A man sleeps.,A person rests.,A man runs.,dev\n"
    '"Quoted, with comma",b,c,dev\n'
)


def unsup(path: Path | str, **kw) -> object:
    return load_train_dataset(DataConfig(train=str(path), **kw), "unsup_simcse")


def sup(path: Path | str, **kw) -> object:
    return load_train_dataset(DataConfig(train=str(path), **kw), "sup_simcse")


def test_text_file_skips_blank_lines_and_is_memory_mapped(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    path.write_text("\ufeffFirst sentence.\n\n   \nSecond one.\r\nThird\n", encoding="utf-8")
    dataset = unsup(path)
    assert dataset.column_names == ["text"]
    assert dataset["text"] == ["First sentence.", "Second one.", "Third"]
    assert dataset.cache_files, "expected an Arrow file on disk, not an in-memory table"


def test_gzip_slice_of_the_wiki_mirror() -> None:
    dataset = unsup("$LWAP_DATA_DIR/wiki/wiki_sentences_1m.txt.gz", max_examples=50)
    assert len(dataset) == 50
    with gzip.open(data_dir() / "wiki/wiki_sentences_1m.txt.gz", "rt", encoding="utf-8") as handle:
        first = handle.readline().rstrip("\n")
    assert dataset[0]["text"] == first


def test_edited_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    path.write_text("one\n", encoding="utf-8")
    assert len(unsup(path)) == 1
    path.write_text("one\ntwo\n", encoding="utf-8")
    assert len(unsup(path)) == 2


def test_triplets_csv_quoting_and_extra_columns(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(TRIPLETS, encoding="utf-8")
    dataset = sup(path)
    assert dataset.column_names == ["anchor", "positive", "negative"]
    assert dataset[1] == {"anchor": "Quoted, with comma", "positive": "b", "negative": "c"}


def test_pairs_without_hard_negatives(tmp_path: Path) -> None:
    path = tmp_path / "p.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write('premise\thypothesis\nA "bare quote" here\tOther\n')
    dataset = sup(path, anchor_column="premise", positive_column="hypothesis", hard_negative_column=None)
    assert dataset.column_names == ["anchor", "positive"]
    assert dataset[0]["anchor"] == 'A "bare quote" here'  # TSV: no quoting


def test_real_snli_triplets() -> None:
    dataset = sup("$LWAP_DATA_DIR/nli/snli_dev_test_triplets.csv", max_examples=100)
    assert len(dataset) == 100 and all(row["negative"] for row in dataset)


def error_of(call, *args, **kw) -> str:
    with pytest.raises(DataError) as caught:
        call(*args, **kw)
    return str(caught.value)


def test_missing_empty_and_directory(tmp_path: Path) -> None:
    assert "no such file" in error_of(unsup, tmp_path / "nope.txt")
    (tmp_path / "empty.txt").write_bytes(b"")
    assert "empty" in error_of(unsup, tmp_path / "empty.txt")
    (tmp_path / "blank.txt").write_text("\n \n\n", encoding="utf-8")
    assert "only blank lines" in error_of(unsup, tmp_path / "blank.txt")
    (tmp_path / "folder.csv").mkdir()
    assert "is a directory" in error_of(sup, tmp_path / "folder.csv")


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("fine\nalso fine\ncaf\xe9\n".encode("latin-1"))
    message = error_of(unsup, path)
    assert f"{path}:3" in message and "UTF-8" in message


def test_truncated_gzip(tmp_path: Path) -> None:
    whole = gzip.compress(("a sentence that repeats\n" * 5000).encode())
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(whole[: len(whole) // 2])
    assert "truncated or corrupt" in error_of(unsup, path)


def test_csv_row_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("sent0,sent1,hard_neg\na,b,c\nd,e\n", encoding="utf-8")
    message = error_of(sup, path)
    assert f"{path}:3" in message and "expected 3" in message and "found 2" in message
    path.write_text("sent0;sent1;hard_neg\na;b;c\n", encoding="utf-8")
    assert "missing column" in error_of(sup, path)


def test_empty_texts_train_as_a_space_as_simcse_does(tmp_path: Path) -> None:
    """SimCSE's train.py replaces a None field by " " ("Avoid 'None' fields"); lwap does the same for an
    empty or blank CSV/TSV field or hub value, and counts them (`lwap train` prints the count)."""
    import unittest.mock

    import datasets

    from lwap.train.data import EMPTY_TEXT, _hub_dataset, empty_texts

    path = tmp_path / "gaps.csv"
    path.write_text('sent0,sent1,hard_neg\na,b,c\nd,e,\n"  ",f,g\n', encoding="utf-8")
    dataset = sup(path)
    assert dataset["negative"] == ["c", EMPTY_TEXT, "g"] and dataset["anchor"] == ["a", "d", EMPTY_TEXT]
    assert empty_texts(dataset) == 2
    text = tmp_path / "lines.txt"
    text.write_text("x\n\n   \ny\n", encoding="utf-8")  # blank lines of a text file: skipped, not examples
    assert unsup(text)["text"] == ["x", "y"] and empty_texts(unsup(text)) == 0

    hub = datasets.Dataset.from_dict({"sent0": ["a", None, "c"], "sent1": ["x", "y", "  "]})
    folder = tmp_path / "hub"
    hub.save_to_disk(str(folder))
    with unittest.mock.patch.object(
        datasets, "load_dataset", lambda *a, **k: datasets.load_from_disk(str(folder))
    ):
        loaded = _hub_dataset(
            DataConfig(train="someone/set", hard_negative_column=None),
            ["sent0", "sent1"],
            ["anchor", "positive"],
        )
    assert loaded["anchor"] == ["a", EMPTY_TEXT, "c"] and loaded["positive"] == ["x", "y", EMPTY_TEXT]
    assert empty_texts(loaded) == 2


def test_missing_column_and_wrong_kind(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text("sent0,sent1\na,b\n", encoding="utf-8")
    message = error_of(sup, path)
    assert "'hard_neg'" in message and "hard_negative_column: null" in message
    path.write_text("sent0,sent1,hard_neg\n", encoding="utf-8")
    assert "no examples" in error_of(sup, path)
    text = tmp_path / "s.txt"
    text.write_text("one\n", encoding="utf-8")
    assert "sup_simcse reads a table" in error_of(sup, text)


def test_hub_id_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    message = error_of(unsup, "someone/no-such-dataset-lwap-test")
    assert "hub is offline" in message and "someone/no-such-dataset-lwap-test" in message
