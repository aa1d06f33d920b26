"""Training data in every format `data.train` reads (issue 48): the same examples from each, columns by
name for both objectives, and every refusal one line with exit 2 from `lwap train`."""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from lwap.cli import main
from lwap.errors import DataError
from lwap.train import data_rows
from lwap.train.config import DataConfig
from lwap.train.data import EMPTY_TEXT, load_train_dataset

# (anchor, positive, two hard negatives, an extra column of another type); empty and null texts included
ROWS = [
    {"query": "How do plants make food?", "doc": "Photosynthesis, in leaves.", "n1": "Rocks erode.",
     "n2": "Cats purr.", "id": 1},
    {"query": 'A "quoted", comma text', "doc": "Zürich — ünïcode ✓", "n1": "", "n2": None, "id": 2},
    {"query": "Third", "doc": "Tab\tinside? no: CSV only", "n1": "x", "n2": "y", "id": 3},
]  # fmt: skip
SUP = {"anchor_column": "query", "positive_column": "doc", "hard_negative_column": None}
EXPECTED_SUP = {
    "anchor": [r["query"] for r in ROWS],
    "positive": [r["doc"] for r in ROWS],
    "negative_1": ["Rocks erode.", EMPTY_TEXT, "x"],
    "negative_2": ["Cats purr.", EMPTY_TEXT, "y"],
}


def _open(path: Path, mode: str = "wt"):
    return (
        gzip.open(path, mode, encoding="utf-8") if path.suffix == ".gz" else path.open(mode, encoding="utf-8")
    )


def write_table(path: Path, delimiter: str) -> None:
    """CSV as Python's csv module quotes it; TSV unquoted, fields joined by tabs (none inside a field)."""
    rows = [{k: "" if v is None else str(v) for k, v in r.items()} for r in ROWS]
    with _open(path) as handle:
        if delimiter == ",":
            writer = csv.DictWriter(handle, list(ROWS[0]))
            writer.writeheader()
            writer.writerows(rows)
        else:
            lines = [list(ROWS[0]), *([v.replace("\t", " ") for v in r.values()] for r in rows)]
            handle.write("".join("\t".join(fields) + "\n" for fields in lines))


def write_json_lines(path: Path) -> None:
    with _open(path) as handle:
        handle.write("\n".join(json.dumps(r, ensure_ascii=False) for r in ROWS) + "\n\n")


def write_json_array(path: Path) -> None:
    with _open(path) as handle:
        json.dump(ROWS, handle, indent=2, ensure_ascii=False)


def write_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(ROWS), path)


def write_saved(path: Path) -> None:
    import datasets

    datasets.Dataset.from_list(ROWS).save_to_disk(str(path))


def write_saved_splits(path: Path) -> None:
    import datasets

    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(ROWS), "dev": datasets.Dataset.from_list(ROWS[:1])}
    ).save_to_disk(str(path))


WRITERS: dict[str, Callable[[Path], None]] = {
    "t.csv": lambda p: write_table(p, ","),
    "t.csv.gz": lambda p: write_table(p, ","),
    "t.tsv": lambda p: write_table(p, "\t"),
    "t.tsv.gz": lambda p: write_table(p, "\t"),
    "t.jsonl": write_json_lines,
    "t.jsonl.gz": write_json_lines,
    "t.ndjson": write_json_lines,
    "array.json": write_json_array,
    "array.json.gz": write_json_array,
    "lines.json": write_json_lines,  # what datasets' Dataset.to_json writes
    "t.parquet": write_parquet,
    "saved": write_saved,
    "saved-splits": write_saved_splits,
}


def load(path: Path | str, objective: str = "sup_simcse", **data) -> object:
    return load_train_dataset(DataConfig(train=str(path), **data), objective)


@pytest.mark.parametrize("name", WRITERS)
def test_every_table_format_gives_the_same_examples(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    WRITERS[name](path)
    dataset = load(path, **SUP, hard_negative_columns=["n1", "n2"])
    expected = dict(EXPECTED_SUP)
    if name.startswith("t.tsv"):
        expected["positive"] = [text.replace("\t", " ") for text in expected["positive"]]
    assert dataset.column_names == list(expected) and dataset[:] == expected
    assert dataset.cache_files, "expected a memory-mapped Arrow file, not an in-memory table"
    # unsupervised from the same file: the text column by name; one hard negative; pairs; the first N
    assert load(path, "unsup_simcse", text_column="query")["text"] == expected["anchor"]
    one = load(path, anchor_column="query", positive_column="doc", hard_negative_column="n1")
    assert (
        one.column_names == ["anchor", "positive", "negative"] and one["negative"] == expected["negative_1"]
    )
    pairs = load(path, **SUP, max_examples=2)
    assert pairs.column_names == ["anchor", "positive"] and pairs["anchor"] == expected["anchor"][:2]


def test_text_files_plain_and_gzipped(tmp_path: Path) -> None:
    for name in ("s.txt", "s.text", "s.txt.gz", "s.text.gz"):
        path = tmp_path / name
        with _open(path) as handle:
            handle.write("\ufeffone\n\n  \ntwo\r\n")
        assert load(path, "unsup_simcse")["text"] == ["one", "two"]


def test_saved_dataset_dict_reads_the_split_asked_for(tmp_path: Path) -> None:
    write_saved_splits(tmp_path / "d")
    assert load(tmp_path / "d", "unsup_simcse", text_column="query", hub_split="dev")["text"] == [
        ROWS[0]["query"]
    ]
    with pytest.raises(DataError, match=r"no split 'test' \(data.hub_split\); it has train, dev"):
        load(tmp_path / "d", "unsup_simcse", text_column="query", hub_split="test")
    assert not list((tmp_path / "d").rglob("cache-*")), "nothing is written into the user's folder"


def test_edited_parquet_is_read_again(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"text": ["a"]}), path)
    assert load(path, "unsup_simcse")["text"] == ["a"]
    pq.write_table(pa.table({"text": ["a", "b"]}), path)
    assert load(path, "unsup_simcse")["text"] == ["a", "b"]


def test_json_array_split_anywhere_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The array reader reads a few bytes at a time here: every element, multi-byte character, number and
    literal is cut somewhere, and the rows are still the same; the line of a fault is still right."""
    path = tmp_path / "a.json"
    rows = [{"text": f"sentence {i} ✓ é", "n": 10**i, "ok": True, "none": None} for i in range(40)]
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    for chunk in (1, 3, 7, 64):
        monkeypatch.setattr(data_rows, "JSON_CHUNK", chunk)
        assert [r["text"] for r in data_rows.json_array_rows(path, ("text",), ("text",))] == [
            r["text"] for r in rows
        ]
    broken = json.dumps(rows[:3], indent=1).replace('"sentence 2', '"sentence 2\\q')
    path.write_text(broken, encoding="utf-8")
    line = next(n for n, text in enumerate(broken.splitlines(), 1) if "sentence 2" in text)
    with pytest.raises(DataError, match=rf"a.json:{line}: not valid JSON \(Invalid \\escape\) in row 3$"):
        list(data_rows.json_array_rows(path, ("text",), ("text",)))


@pytest.mark.slow  # tracemalloc slows every allocation: about 40 s
def test_a_big_json_lines_file_is_streamed(tmp_path: Path) -> None:
    """200,000 examples (~12 MB): read into the Arrow cache without the file's rows in memory."""
    import tracemalloc

    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for i in range(200_000):
            handle.write(
                json.dumps({"text": f"sentence number {i} of a file too big to hold", "i": i}) + "\n"
            )
    tracemalloc.start()
    dataset = load(path, "unsup_simcse")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(dataset) == 200_000 and dataset[199_999]["text"].startswith("sentence number 199999 ")
    assert peak < path.stat().st_size / 2, f"peak {peak / 2**20:.1f} MiB for a {path.stat().st_size} B file"


# --- refusals: one line, exit 2, naming the file, the line or row, and what was expected ----------------


def train_error(tmp_path: Path, tiny_bert: Path, capsys, data: dict, objective: str = "sup_simcse",
                training: dict | None = None) -> str:  # fmt: skip
    raw = {
        "output": {"dir": str(tmp_path / "run")},
        "model": {"backbone": str(tiny_bert), "pooling": "mean"},
        "data": {**SUP, **data},
        "objective": {"name": objective},
        "training": {"max_steps": 1, "progress_bar": False, **(training or {})},
        "eval": {"dev": None, "keep_best": False},
    }
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return refused_line(tmp_path, capsys, config)


def refused_line(tmp_path: Path, capsys, config: Path) -> str:
    """`lwap train config` refused: exit 2, one stderr line, no run folder (tmp_path / "run"); the line."""
    capsys.readouterr()
    assert main(["train", str(config)]) == 2
    err = capsys.readouterr().err.splitlines()  # a library's progress bar is a line too (issue 67)
    assert len(err) == 1 and err[0].startswith("lwap train: error: "), err
    assert not (tmp_path / "run").exists(), "a refused input must not start a run folder"
    return err[0]


def deep(depth: int) -> str:
    return '{"text": ' + "[" * depth + "]" * depth + "}"


def test_refusals_are_one_line_with_exit_2(tmp_path: Path, tiny_bert: Path, capsys) -> None:
    def refused(name: str, content: str | bytes, says: str, **data) -> None:
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        line = train_error(tmp_path, tiny_bert, capsys, {"train": str(path), **data})
        assert says in line and str(path) in line, line

    # what is not text is never read as text: an unknown suffix, also one that was text before
    refused("notes.dat", "a sentence\n", "unknown kind of data file (data.train); expected one of .txt")
    refused("t.xml", "<a/>\n", "unknown kind of data file")
    refused("t.parquet.gz", b"\x1f\x8b", "unknown kind of data file")
    refused("s.txt", "one\n", "sup_simcse reads a table with columns (query, doc)")
    # JSON lines: line by line
    good = json.dumps({"query": "q", "doc": "d"})
    refused(
        "a.jsonl",
        f"{good}\n[1, 2]\n",
        ":2: expected a JSON object (an example with its texts by name), found an array",
    )
    refused("b.jsonl", f'{good}\n"just text"\n', ":2: expected a JSON object")
    refused("c.jsonl", f'{good}\n{{"query": "q", doc: 1}}\n', ":2: not valid JSON (Expecting property name")
    refused(
        "d.jsonl", f'{good}\n{{"query": "q", "doc": 7}}\n', ":2: 'doc' is a number (7), expected a string"
    )
    refused(
        "e.jsonl", f'{good}\n{{"query": "q", "doc": ["d"]}}\n', ":2: 'doc' is an array, expected a string"
    )
    refused("f.jsonl", f'{good}\n{{"query": "q"}}\n', ":2: no key 'doc'; the object has 'query'")
    refused(
        "g.jsonl", f'{good}\n{{"query": "q", "doc": "d", "x": {"1" * 5000}}}\n', ":2: not valid JSON (Exceeds"
    )
    refused("h.jsonl", "\n\n", "no examples")
    # nesting: refused at 65 levels, long before Python's recursion limit; 100,000 levels never recurse
    refused("deep.jsonl", f"{good}\n{deep(65)}\n", ":2: JSON nested deeper than 64 levels")
    refused("deeper.jsonl", f"{good}\n{deep(100_000)}\n", ":2: JSON nested deeper than 64 levels")
    refused("deep.json", f"[{good},\n{deep(100_000)}]", "row 2 (line 2): JSON nested deeper than 64 levels")
    # a JSON array: by row and line
    refused("a.json", f'[{good},\n {{"query": "q", "doc": false}}]', "row 2 (line 2): 'doc' is false")
    refused(
        "b.json",
        f'[{good},\n {{"query": "q", "do',
        "row 2 (line 2): the file ends inside this row (truncated?)",
    )
    refused(
        "f.json", f"[{good},\n {good}", "f.json:2: expected ',' or ']' after row 2, found the end of the file"
    )
    refused("c.json", f"[{good}\n {good}]", "c.json:2: expected ',' or ']' after row 1, found '{'")
    refused("d.json", f"[{good}] {good}", "text after the end of the JSON array")
    refused("e.json", '{"query": "q",\n "doc": "d"}\n', "e.json:1: not valid JSON")
    # tables
    refused("a.csv", "query,doc\nq\n", "a.csv:2: expected 2 CSV fields as in the header, found 1")
    refused("b.csv", "query,text\nq,d\n", "missing column(s) 'doc'; the header has 'query', 'text'")
    # Parquet: the schema, a damaged file
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"query": ["q"], "doc": [1]}), tmp_path / "n.parquet")
    refused("n.parquet", (tmp_path / "n.parquet").read_bytes(), "column 'doc' holds int64, expected text")
    refused(
        "m.parquet",
        (tmp_path / "n.parquet").read_bytes(),
        "missing column(s) 'negs'",
        hard_negative_column="negs",
    )
    refused("x.parquet", b"PAR1 not really parquet PAR1", "not a readable Parquet file")


def test_folders_that_save_to_disk_did_not_write(tmp_path: Path, tiny_bert: Path, capsys) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "data.csv").write_text("query,doc\nq,d\n", encoding="utf-8")
    line = train_error(tmp_path, tiny_bert, capsys, {"train": str(plain)})
    assert "is a directory, expected a data file" in line and "state.json or dataset_dict.json" in line
    hostile = tmp_path / "hostile"
    write_saved(hostile)
    state = json.loads((hostile / "state.json").read_text())
    state["_data_files"] = [{"filename": "../elsewhere.arrow"}]
    (hostile / "state.json").write_text(json.dumps(state))
    line = train_error(tmp_path, tiny_bert, capsys, {"train": str(hostile)})
    assert "state.json: names a file or folder outside its own folder ('../elsewhere.arrow')" in line
    damaged = tmp_path / "damaged"
    write_saved(damaged)
    next(damaged.glob("*.arrow")).write_bytes(b"not arrow")
    line = train_error(tmp_path, tiny_bert, capsys, {"train": str(damaged)})
    assert f"{damaged}: not a readable save_to_disk folder" in line


def test_both_hard_negative_keys_is_a_config_error(tmp_path: Path, tiny_bert: Path, capsys) -> None:
    write_json_lines(tmp_path / "t.jsonl")
    both = {"train": str(tmp_path / "t.jsonl"), "hard_negative_column": "n1", "hard_negative_columns": ["n2"]}
    line = train_error(tmp_path, tiny_bert, capsys, both)
    assert "data.hard_negative_column ('n1') and data.hard_negative_columns (['n2']) are both set" in line
    twice = {"train": str(tmp_path / "t.jsonl"), "hard_negative_columns": ["n1", "query"]}
    line = train_error(tmp_path, tiny_bert, capsys, twice)
    assert "data.anchor_column and data.hard_negative_columns[1] both name column 'query'" in line
    empty = {"train": str(tmp_path / "t.jsonl"), "hard_negative_columns": []}
    assert "must list at least one column" in train_error(tmp_path, tiny_bert, capsys, empty)
