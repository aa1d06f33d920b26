"""lwap.checks.files: atomic writes of files and folders, and the shared line reader's edge cases."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from lwap.checks.files import (
    atomic_path,
    check_file,
    decoded_lines,
    leftover_partials,
    text_lines,
    write_json_atomically,
)
from lwap.errors import DataError


def test_file_appears_only_when_complete_and_replaces_the_old_one(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    write_json_atomically({"old": 1}, target)
    with pytest.raises(RuntimeError), atomic_path(target) as partial:
        partial.write_text('{"new": ', encoding="utf-8")
        assert partial.parent == tmp_path and partial.name.startswith(".results.json.partial-")
        raise RuntimeError("crash mid-write")
    assert json.loads(target.read_text()) == {"old": 1}  # the old file, untouched
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # and no temporary file
    write_json_atomically({"new": 2}, target)
    assert target.read_text() == '{\n  "new": 2\n}\n'


def test_folder_is_replaced_whole_and_a_crash_leaves_only_a_partial_to_clean(tmp_path: Path) -> None:
    target = tmp_path / "model"
    for version in ("a", "b"):
        with atomic_path(target) as partial:
            partial.mkdir()
            (partial / version).write_text(version)
    assert [p.name for p in target.iterdir()] == ["b"]  # replaced, not merged
    stale = tmp_path / ".model.partial-999999"  # what a killed process leaves
    stale.mkdir()
    assert leftover_partials(target) == [stale]


def test_a_file_never_replaces_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "out.json"
    (folder / "keep").mkdir(parents=True)
    with pytest.raises(OSError):
        write_json_atomically({}, folder)
    assert (folder / "keep").is_dir() and leftover_partials(folder) == []


def test_check_file_messages(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    cases = {
        tmp_path / "nope.txt": "no such file (data.train)",
        tmp_path: "is a directory, expected a file (data.train)",
        empty: "file is empty",
    }
    for path, message in cases.items():
        with pytest.raises(DataError) as raised:
            check_file(path, key="data.train")
        assert str(raised.value) == f"{path}: {message}"
    check_file(empty, allow_empty=True)


def test_lines_split_on_lf_only_and_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "a.txt.gz"
    path.write_bytes(gzip.compress("one\r\ntwo\x0cstill two\u2028and still\nlast".encode()))
    assert list(text_lines(path)) == [(1, "one"), (2, "two\x0cstill two\u2028and still"), (3, "last")]
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nab\xff\n")
    with pytest.raises(DataError, match=r"bad\.txt:2: not valid UTF-8 \(invalid start byte at byte 2 "):
        list(decoded_lines(bad))
    with pytest.raises(DataError, match=r"^<stdin>: line 2 is not valid UTF-8$"):
        list(decoded_lines(bad, "<stdin>", utf8_error="{label}: line {line} is not valid UTF-8"))
    empty_gz = tmp_path / "empty.txt.gz"
    empty_gz.write_bytes(gzip.compress(b""))
    with pytest.raises(DataError, match=r"empty\.txt\.gz: file is empty"):
        list(text_lines(empty_gz))
