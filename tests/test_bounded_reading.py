"""Bounded reading (issue 49, docs/RELIABILITY.md "Bounded reading"): one way to open what lwap reads
(regular files only, links resolved, loops caught), a limit per kind of file that names itself and can be
raised, data lines read with a bound (gzip too), finite JSON, YAML aliases bounded, outputs that are links.

A reader that opened a FIFO would block for ever: each such test runs under an alarm, so it fails instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import write_gzipped_long_line

from lwap.checks.files import (
    check_file,
    check_output,
    decoded_lines,
    parse_json,
    read_csv_rows,
    read_json,
    read_limited,
    read_yaml,
)
from lwap.checks.limits import JSON_FILE, LINE, YAML_EXPANDED_VALUES
from lwap.checks.safe_yaml import AliasError, parse_yaml
from lwap.errors import ConfigError, DataError

# ten anchors, each a list of nine aliases of the one before: 9**10 (3.5 billion) values once expanded
BOMB = (
    "["
    + ", ".join(
        ["&a [x,x,x,x,x,x,x,x,x]"]
        + [f"&{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]" for i in range(9)]
    )
    + "]"
)


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail (not hang) if the block takes longer than `seconds` (a reader blocked on a FIFO)."""

    def alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s: blocked on a FIFO, or reading without end?")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


READERS: dict[str, Callable[[Path], object]] = {
    "check_file": check_file,
    "read_json": read_json,
    "read_yaml": read_yaml,
    "read_csv_rows": read_csv_rows,
    "decoded_lines": lambda path: list(decoded_lines(path)),
    "read_limited": lambda path: read_limited(path, JSON_FILE),
}


def _special(kind: str, path: Path) -> Iterator[None] | None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        return server  # type: ignore[return-value]
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "dangling":
        path.symlink_to(path.with_name("nowhere"))
    return None


SAYS = {
    "fifo": r"is a named pipe \(FIFO\), expected a regular file",
    "device": r"is a character device, expected a regular file",
    "socket": r"is a socket, expected a regular file",
    "loop": r"is a symbolic link loop",
    "dangling": r"a symbolic link that leads to no file",
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("kind", sorted(SAYS))
def test_special_files_are_refused_by_name_without_opening_them(
    tmp_path: Path, kind: str, reader: str
) -> None:
    path = tmp_path / "file.json"
    server = _special(kind, path)
    try:
        with within(10), pytest.raises(DataError, match=SAYS[kind]) as refused:
            READERS[reader](path)
    finally:
        if server is not None:
            server.close()
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)


def test_a_link_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text('{"a": 1}', encoding="utf-8")
    (tmp_path / "link.json").symlink_to("real.json")
    assert read_json(tmp_path / "link.json") == {"a": 1}


def test_a_limit_names_its_variable_and_the_variable_raises_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"values": list(range(1000))}), encoding="utf-8")
    size = path.stat().st_size
    monkeypatch.setenv("LWAP_MAX_JSON_BYTES", "1024")
    with pytest.raises(DataError) as refused:
        read_json(path)
    assert str(refused.value) == (
        f"{path}: {size:,} bytes, more than the JSON file limit of 1,024 bytes (set LWAP_MAX_JSON_BYTES "
        "to raise it, if the file is meant to be this large)"
    )
    monkeypatch.setenv("LWAP_MAX_JSON_BYTES", str(size))
    assert read_json(path)["values"][-1] == 999
    monkeypatch.setenv("LWAP_MAX_JSON_BYTES", "lots")
    with pytest.raises(ConfigError, match=r"LWAP_MAX_JSON_BYTES='lots': expected a positive number of bytes"):
        read_json(path)


def test_one_enormous_gzipped_line_is_refused_after_the_bound_not_read_whole(tmp_path: Path) -> None:
    """The issue's case: 256 MiB on one line, gzipped to 250 KiB. Refused at that line, with memory that
    stays near the bound (1 MiB), not the line (was read whole: past 4 GiB for a 6 GiB line)."""
    path = write_gzipped_long_line(tmp_path / "train.txt.gz", mebibytes=256)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(DataError) as refused:
            list(decoded_lines(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(refused.value).startswith(
        f"{path}:2: the line is longer than the line limit of 1,048,576 bytes"
    )
    assert "LWAP_MAX_LINE_BYTES" in str(refused.value)
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    assert time.perf_counter() - started < 10


def test_the_line_limit_is_exact_and_raisable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWAP_MAX_LINE_BYTES", "10")
    path = tmp_path / "lines.txt"
    path.write_bytes(b"0123456789\n" + b"0123456789")  # 10 bytes and its LF; 10 bytes at the end
    assert [line for _, line in decoded_lines(path)] == ["0123456789\n", "0123456789"]
    path.write_bytes(b"ok\n" + b"01234567890\n")
    with pytest.raises(DataError, match=r"lines\.txt:2: the line is longer than the line limit of 10 bytes"):
        list(decoded_lines(path))
    monkeypatch.setenv("LWAP_MAX_LINE_BYTES", "11")
    assert len(list(decoded_lines(path))) == 2
    assert LINE.default == 2**20


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"scores": {"stsb": NaN}}', r"x\.json: scores\.stsb is nan, expected a finite number"),
        ('{"a": [1, Infinity]}', r"x\.json: a\[1\] is inf, expected a finite number"),
        ('{"a": {"b": -Infinity}}', r"x\.json: a\.b is -inf"),
        ('{"a": 1e999}', r"x\.json: a is inf"),
        ("[" * 100_000 + "]" * 100_000, r"x\.json: not valid JSON \(nested too deeply\)"),
        ('{"a": ' + "9" * 5000 + "}", r"x\.json: not valid JSON \(Exceeds the limit"),
    ],
)
def test_json_holds_finite_numbers_and_bounded_nesting(text: str, says: str) -> None:
    with pytest.raises(DataError, match=says):
        parse_json(text, "x.json")


def test_non_finite_json_is_read_where_asked_for() -> None:
    """transformers writes a NaN loss into trainer_state.json as `NaN`: its readers pass finite=False."""
    assert parse_json('{"loss": NaN}', "trainer_state.json", finite=False)["loss"] != 0


def test_a_yaml_alias_bomb_fails_fast_in_bounded_memory() -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with within(10), pytest.raises(AliasError, match=r"YAML aliases expand to more than 100,000 values"):
            parse_yaml(f"model:\n  pooling: {BOMB}\n", "c.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 2 and peak < 32 * 2**20


def test_yaml_aliases_within_the_bound_load_and_self_reference_is_refused() -> None:
    shared = parse_yaml("a: &layers [1, 2, 3]\nb: *layers\nc: {<<: {x: 1}, y: 2}\n", "c.yaml")
    assert shared == {"a": [1, 2, 3], "b": [1, 2, 3], "c": {"x": 1, "y": 2}}
    wide = "[" + ",".join(["x"] * (YAML_EXPANDED_VALUES - 10)) + "]"
    assert len(parse_yaml(f"&a {wide}", "c.yaml")) == YAML_EXPANDED_VALUES - 10
    with pytest.raises(AliasError, match="a YAML alias that contains itself"):
        parse_yaml("&a [1, *a]", "c.yaml")
    with pytest.raises(DataError, match=r"c\.yaml: invalid YAML \(nested too deeply\)"):
        parse_yaml("[" * 100_000, "c.yaml")


def test_an_alias_bomb_in_a_config_or_a_set_value_is_a_config_error(tmp_path: Path, tiny_bert: Path) -> None:
    from test_train_run import tiny_config

    from lwap.train import load_config

    config = tiny_config(tmp_path, tiny_bert)
    bombed = tmp_path / "bomb.yaml"
    bombed.write_text(config.read_text(encoding="utf-8").replace("pooling: lwap", f"pooling: {BOMB}"))
    with within(10), pytest.raises(ConfigError, match=r"bomb\.yaml: line \d+: YAML aliases expand"):
        load_config(bombed)
    with within(10), pytest.raises(ConfigError, match=r"--set model\.pooling: line 1: YAML aliases expand"):
        load_config(config, [f"model.pooling={BOMB}"])
    # a value that is not YAML is still taken as its text
    assert load_config(config, ["data.train=[not yaml.txt"]).data.train == "[not yaml.txt"


# --- outputs ------------------------------------------------------------------------------------------


def test_output_links(tmp_path: Path) -> None:
    """A link that leads nowhere is refused as any output; a file output that is a link is refused (lwap
    would replace the link); a folder output may be a link to a folder, but not what lwap writes in it."""
    from lwap.errors import OutputWriteError

    dangling = tmp_path / "out"
    dangling.symlink_to(tmp_path / "nowhere")
    for folder in (True, False):
        with pytest.raises(OutputWriteError, match=r"is a symbolic link to .*nowhere, which does not exist"):
            check_output(dangling, folder=folder)
    (tmp_path / "elsewhere.npy").write_bytes(b"")
    (tmp_path / "out.npy").symlink_to(tmp_path / "elsewhere.npy")
    with pytest.raises(OutputWriteError, match=r"out\.npy: is a symbolic link \(to .*elsewhere\.npy\)"):
        check_output(tmp_path / "out.npy", folder=False)
    (tmp_path / "scratch").mkdir()
    (tmp_path / "run").symlink_to(tmp_path / "scratch")
    check_output(tmp_path / "run", folder=True, entries=("model", "checkpoints/*"))
    (tmp_path / "scratch" / "checkpoints").mkdir()
    (tmp_path / "scratch" / "checkpoints" / "checkpoint-5").symlink_to(tmp_path)
    with pytest.raises(OutputWriteError, match=r"checkpoints/checkpoint-5 is a symbolic link"):
        check_output(tmp_path / "run", folder=True, entries=("model", "checkpoints/*"))


def test_train_refuses_a_dangling_output_dir_before_any_work(tmp_path: Path, tiny_bert: Path, capfd) -> None:
    """The issue's case (was FileExistsError): one line, exit 2, the link left as it was."""
    from test_train_run import tiny_config

    from lwap.cli import main

    out = tmp_path / "run"
    out.symlink_to(tmp_path / "gone")
    assert main(["train", str(tiny_config(tmp_path, tiny_bert))]) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0 and "output.dir" in err and "which does not exist" in err, err
    assert out.is_symlink() and not (tmp_path / "gone").exists()


# --- compare cells ------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "benchmarks" / "results" / "compare"


@pytest.mark.parametrize(
    ("score", "says"),
    [
        ("NaN", r"scores\.stsb is nan, expected a finite number"),
        ("Infinity", r"scores\.stsb is inf, expected a finite number"),
        ("null", r"scores\.stsb is null \(a NaN when it was measured\?\), expected a finite number"),
        ('"80.1"', r"scores\.stsb is str '80\.1', expected a finite number"),
        ("true", r"scores\.stsb is bool True, expected a finite number"),
    ],
)
def test_a_cell_score_that_is_not_a_finite_number(tmp_path: Path, score: str, says: str) -> None:
    from lwap.compare.cells import read

    path = tmp_path / "lwap-seed0.json"
    path.write_text('{"pooler": "lwap", "seed": 0, "scores": {"sts12": 70.0, "stsb": ' + score + "}}")
    with pytest.raises(DataError, match=rf"^{path}: {says}$"):
        read(path)


def test_two_cells_of_one_pooler_and_seed_are_refused_not_averaged(tmp_path: Path) -> None:
    from lwap.compare.cells import load_cells

    folder = tmp_path / "unsup"
    shutil.copytree(COMMITTED / "unsup", folder)
    assert len(load_cells(folder)["lwap"]) == 3
    shutil.copy(folder / "lwap-seed1.json", folder / "lwap-seed1 (copy).json")
    with pytest.raises(
        DataError, match=r"a second cell for pooler 'lwap', seed 1 \(the first: .*\); one grid"
    ):
        load_cells(folder)


@pytest.mark.parametrize("fault", ["nan", "duplicate", "dev-zero"])
def test_compare_report_on_a_bad_cell_is_one_line(tmp_path: Path, fault: str, capfd) -> None:
    """The issue's cases through `lwap compare report`: a NaN score (was a traceback), a second cell for
    one pooler and seed (was averaged: "19 of 18 planned cells"), /dev/zero linked as a cell (was read
    without bound)."""
    from lwap.cli import main

    results = tmp_path / "grid"
    shutil.copytree(COMMITTED / "unsup", results / "unsup")
    shutil.copy(COMMITTED / "untouched-backbone.json", results)
    cell = results / "unsup" / "lwap-seed1.json"
    if fault == "nan":
        text = cell.read_text(encoding="utf-8")
        cell.write_text(re.sub(r'"stsb": [\d.]+', '"stsb": NaN', text, count=1), encoding="utf-8")
    elif fault == "duplicate":
        shutil.copy(cell, cell.with_name("lwap-seed1-again.json"))
    else:
        cell = cell.with_name("zero.json")
        cell.symlink_to("/dev/zero")
    with within(60):
        assert main(["compare", "report", "--results", str(results)]) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("lwap compare: error: "), err
    says = {
        "nan": r"scores\.stsb is nan",
        "duplicate": r"a second cell",
        "dev-zero": r"is a character device",
    }
    assert re.search(says[fault], err) and "unsup" in err, err
