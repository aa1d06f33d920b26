"""The path error matrix (tests/path_matrix.py): each path-taking argument, config key and variable × each
way a path goes wrong, through `lwap.cli.main` in-process on the tiny random BERT.

An error cell must exit 2 with one line on stderr that names the path and says what was expected, no
traceback, and leave the cell's folder exactly as it was (no partial output, nothing changed). A works cell
must exit 0 (training: reach the optimisation loop, see `_train_until_the_loop`) and change nothing that
existed before.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import itertools
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO, SENTENCES
from eval_mirror import write_beir
from hostile import CRAFTS, MARKER, craft_half_json
from path_matrix import (
    HOSTILE,
    INPUT_FILE,
    INPUT_FOLDER,
    NOT_PATH_VARIABLES,
    NOT_PATHS,
    OUTPUT_FAULTS,
    OUTPUT_FILE,
    TARGETS,
    Fault,
    Target,
    cell_id,
    cells,
    current_doc_section,
    doc_section,
)

from lwap.checks.limits import JSON_FILE, LINE, YAML_FILE
from lwap.checks.output_claim import MARKER as OUTPUT_MARKER
from lwap.checks.output_claim import file_lock, folder_lock
from lwap.cli import build_parser, main
from lwap.train.config import all_keys

TARGET = {target.name: target for target in TARGETS}
NOT_UTF8 = b"\xff\xfe Latin-1, not UTF-8: caf\xe9\n"
UNICODE_FOLDER = "ein Ordner ü 日本 ß"
TRAIN_SENTENCES = [f"training sentence number {i} about {w}" for i, w in enumerate("abcdefghijklmnop")]


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread while the matrix runs: its cells encode a handful of sentences, and on a busy
    machine two threads wait on each other (3.5 s instead of 0.4 s for one eval cell here)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_lwap(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lwap import build_model

    folder = tmp_path_factory.mktemp("path-matrix") / "tiny-lwap"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    return folder


# --- valid inputs -------------------------------------------------------------------------------------


def _write_text(path: Path, lines: list[str]) -> None:
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)


def _write_beir(folder: Path, gz: bool) -> None:
    docs = [{"_id": f"d{i}", "title": "", "text": s} for i, s in enumerate(SENTENCES)]
    queries = [{"_id": "q0", "text": "a guitar"}, {"_id": "q1", "text": "markets"}]
    write_beir(folder, docs, queries, [("q0", "d0", 1), ("q1", "d3", 1)], gzip_corpus=gz)


def _write_mirror(root: Path) -> None:
    folder = root / "stsb" / "senteval-tokenized"
    folder.mkdir(parents=True)
    rows = [
        f"main-captions\tMSRvid\t2012test\t{i:04d}\t{i % 5}.0\t{a}\t{b}"
        for i, (a, b) in enumerate(zip(SENTENCES, SENTENCES[1:] + SENTENCES[:1], strict=True))
    ]
    (folder / "sts-test.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")


class World:
    """A cell's folder: valid defaults for every path slot, and how to make a valid one of any target."""

    def __init__(self, root: Path, tiny_lwap: Path, tiny_bert: Path) -> None:
        self.root, self.tiny_lwap, self.tiny_bert = root, tiny_lwap, tiny_bert
        _write_text(root / "in.txt", SENTENCES)
        _write_beir(root / "beir", gz=True)
        _write_mirror(root / "data")
        _write_text(root / "train.txt", TRAIN_SENTENCES)
        self.make_valid(TARGET["mine PAIRS"], root / "pairs.csv")

    def make_valid(self, target: Target, path: Path, *, gz: bool = False) -> None:
        """A valid `target` at `path` (input folders with a .gz inside when `gz`)."""
        if target.dest == "model":
            shutil.copytree(self.tiny_lwap, path)
        elif target.dest == "resume":
            shutil.copytree(self.tiny_lwap, path)
            (path / "trainer_state.json").write_text(json.dumps({"global_step": 1}), encoding="utf-8")
        elif target.dest == "run_dir":  # a finished run: its model, config and summary
            shutil.copytree(self.tiny_lwap, path / "model")
            (path / "config.yaml").write_text(yaml.safe_dump(self.config()), encoding="utf-8")
            summary = {"steps": 1, "train_examples": len(TRAIN_SENTENCES), "versions": {"lwap": "0.1.0"}}
            (path / "train_summary.json").write_text(json.dumps(summary), encoding="utf-8")
        elif target.dest == "model.backbone":
            shutil.copytree(self.tiny_bert, path)
        elif target.dest == "tasks":
            _write_beir(path, gz=gz)
        elif target.dest == "LWAP_DATA_DIR":
            _write_mirror(path)
        elif target.dest == "input":
            _write_text(path, SENTENCES)
        elif target.dest == "data.train":
            _write_text(path, TRAIN_SENTENCES)
        elif target.dest == "eval.dev":
            rows = [f"{a}\t{b}\t{i % 5}" for i, (a, b) in enumerate(itertools.pairwise(SENTENCES))]
            _write_text(path, ["sentence1\tsentence2\tscore", *rows])
        elif target.dest == "pairs":
            pairs = itertools.pairwise(TRAIN_SENTENCES)
            _write_text(path, ["sent0,sent1", *(f"{a},{b}" for a, b in pairs)])
        elif target.dest == "corpus":
            _write_text(path, SENTENCES)
        elif target.dest == "config":
            path.write_text(yaml.safe_dump(self.config()), encoding="utf-8")
        else:
            raise AssertionError(f"no valid {target.name} to make")

    def config(self, **paths: str) -> dict:
        """A training config on the tiny BERT; `paths` replaces the dotted path keys."""
        raw = {
            "output": {"dir": str(self.root / "run"), "save_steps": 100},
            "model": {"backbone": str(self.tiny_bert), "pooling": "lwap", "max_seq_length": 16},
            "data": {"train": str(self.root / "train.txt")},
            "objective": {"name": "unsup_simcse"},
            # 2 steps: resuming the valid checkpoint (step 1) still reaches the loop
            "training": {"max_steps": 2, "per_device_batch_size": 4, "progress_bar": False},
            "eval": {"dev": None, "keep_best": False, "before_training": False},
        }
        for key, value in paths.items():
            section, name = key.split(".")
            raw[section][name] = value
        return raw

    def command(self, target: Target, path: Path) -> tuple[list[str], dict[str, str]]:
        """argv and environment with `path` in `target`'s slot and valid defaults elsewhere."""
        value = str(path)
        env = {"LWAP_DATA_DIR": str(self.root / "data")}
        if target.command == "encode":
            slots = {"model": str(self.tiny_lwap), "input": str(self.root / "in.txt"), "output": ""}
            slots["output"] = str(self.root / "out.npy")
            slots[target.dest] = value
            argv = ["encode", slots["model"], "--input", slots["input"], "--output", slots["output"]]
            return [*argv, "--no-progress"], env
        if target.command == "eval":
            slots = {"model": str(self.tiny_lwap), "tasks": str(self.root / "beir")}
            if target.dest == "LWAP_DATA_DIR":
                env["LWAP_DATA_DIR"], slots["tasks"] = value, "stsb"
            else:
                slots[target.dest] = value
            argv = ["eval", slots["model"], "--tasks", slots["tasks"], "--no-progress"]
            return argv + (["--output", slots["output"]] if "output" in slots else []), env
        if target.command == "card":
            return ["card", value], env
        if target.command == "mine":
            slots = {"pairs": str(self.root / "pairs.csv"), "model": str(self.tiny_lwap)}
            slots |= {"corpus": str(self.root / "in.txt"), "output": str(self.root / "mined.csv")}
            slots[target.dest] = value
            argv = ["mine", slots["pairs"], "--model", slots["model"], "--output", slots["output"]]
            return [*argv, "--corpus", slots["corpus"], "--relative-margin", "-1"], env
        if target.command == "truncate":
            slots = {"model": str(self.tiny_lwap), "output": str(self.root / "small")}
            slots[target.dest] = value
            return ["truncate", slots["model"], slots["output"], "--layers", "1"], env
        config = self.root / "config.yaml"
        if target.dest == "config":
            config = path
        else:
            keys = {target.dest: value} if target.where == "config key" else {}
            if target.dest == "resume" and path.parent.name == "checkpoints":  # its run's folder is OUT
                keys = {"output.dir": str(path.parent.parent)}
            config.write_text(yaml.safe_dump(self.config(**keys), allow_unicode=True), encoding="utf-8")
        argv = ["train", str(config)]
        return argv + (["--resume", value] if target.dest == "resume" else []), env


# --- faults -------------------------------------------------------------------------------------------


def _unwritable_folder(world: World, request: pytest.FixtureRequest) -> Path:
    """A folder this process cannot create anything in. Root ignores permission bits (chmod would not
    stop it), so under root it is /sys, which refuses root too; skipped where even that is writable."""
    if os.geteuid() != 0:
        folder = world.root / "cell"
        folder.mkdir()
        folder.chmod(0o555)
        request.addfinalizer(lambda: folder.chmod(0o755))
        return folder
    try:
        handle, probe = tempfile.mkstemp(dir="/sys")
    except OSError:
        return Path("/sys/lwap-path-matrix")
    os.close(handle)
    os.unlink(probe)
    pytest.skip("root can write in /sys here: no folder is unwritable to this process")


def _truncate(path: Path) -> None:
    """Cut a valid .gz file in half, as an interrupted download leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def make_fault(world: World, target: Target, fault: str, request: pytest.FixtureRequest) -> Path:
    """Create the broken (or, for unicode-name, valid) path of a cell; return it."""
    cell = world.root / "cell"
    is_file = target.role in (INPUT_FILE, OUTPUT_FILE)
    if fault == "unicode-name":
        name = target.filename if target.dest == "resume" else f"Datei é {target.filename}"
        # a checkpoint is resumed only in its own run's folder (lwap.train.resume): OUT/checkpoints/NAME
        inside = "checkpoints/" if target.dest == "resume" else ""
        path = world.root / UNICODE_FOLDER / f"{inside}{name}"
        if target.role in (INPUT_FILE, INPUT_FOLDER):  # outputs: the parents are created by the command
            path.parent.mkdir(parents=True)
            world.make_valid(target, path)
        if inside:  # the run's folder is lwap's, as a run marks it before its first checkpoint
            mark = {"made_by": "lwap", "command": "train", "run_id": "0" * 32, "version": "0.1.0"}
            (path.parent.parent / OUTPUT_MARKER).write_text(json.dumps(mark), encoding="utf-8")
        return path
    if fault == "parent-is-file":
        cell.write_text("a file where a folder is expected\n", encoding="utf-8")
        return cell / target.filename
    if fault == "unwritable":
        return _unwritable_folder(world, request) / target.filename
    cell.mkdir()
    path = cell / target.filename
    if fault == "missing":
        return path
    if fault == "wrong-kind":
        if is_file:
            path.mkdir()
            (path / "inside.txt").write_text("a file in a folder\n", encoding="utf-8")
        else:
            path.write_text("a file, not a folder\n", encoding="utf-8")
    elif fault == "symlink-loop":
        path.symlink_to(path.name)
    elif fault == "empty":
        path.write_bytes(b"") if is_file else path.mkdir()
    elif fault == "not-utf8":
        if is_file:
            path.write_bytes(NOT_UTF8)
        else:
            world.make_valid(target, path)
            (path / target.inner).write_bytes(NOT_UTF8)
    elif fault == "truncated-gzip":
        if is_file:
            path = path.with_name(path.name + ".gz")
            world.make_valid(target, path)
            _truncate(path)
        else:
            world.make_valid(target, path, gz=True)
            _truncate(path / f"{target.inner}.gz")
    elif fault.startswith("weights-"):
        world.make_valid(target, path)
        _damage_weights(path / target.weights, fault)
    elif fault == "half-json":
        world.make_valid(target, path)
        craft_half_json(path / target.inner)
    elif fault in HOSTILE:
        world.make_valid(target, path)
        CRAFTS[fault](path / (target.model or "."))
    elif fault in ("fifo", "device"):
        if not is_file:
            world.make_valid(target, path)
            path, cell_path = path / target.inner, path
            path.unlink()
        os.mkfifo(path) if fault == "fifo" else path.symlink_to("/dev/zero")
        return path if is_file else cell_path
    elif fault == "dangling-link":
        path.symlink_to(cell / "nowhere")
    elif fault == "oversize":
        path = _oversize(world, target, path, is_file)
    elif fault in OUTPUT_FAULTS:
        _output_fault(world, target, fault, path, is_file)
    else:
        raise AssertionError(f"unknown fault {fault}")
    return path


def _oversize(world: World, target: Target, path: Path, is_file: bool) -> Path:
    """`path` (or the file inside that is read) one past its limit: the YAML and JSON limits by size, a
    file read line by line by one line longer than the line limit (a .gz where .gz is read); returned."""
    if is_file and target.dest == "config":
        path.write_text("# " + "x" * YAML_FILE.default + "\n", encoding="utf-8")
        return path
    if is_file:  # a valid file (a header where one is read first) with one line past the limit after it
        world.make_valid(target, path)
        valid = path.read_bytes()
        path.unlink()
        long_line = ("x" * (LINE.default + 1)).encode("utf-8")
        data = valid + long_line + b"\n"
        if target.gzip:  # 1 MiB of the same byte compresses to 1 KiB: read on, it is decompressed
            path = path.with_name(path.name + ".gz")
            data = gzip.compress(data)
        path.write_bytes(data)
        return path
    world.make_valid(target, path)
    inner = path / target.inner
    data = inner.read_bytes()
    inner.unlink()  # copies can be hard links to the module fixture: never write through them
    if target.inner.endswith(".json"):  # still valid JSON: only the limit refuses it
        inner.write_bytes(data + b" " * (JSON_FILE.default + 1))
    else:
        inner.write_bytes(data + b"x" * (LINE.default + 1) + b"\n")
    return path


def _damage_weights(weights: Path, fault: str) -> None:
    """Truncate, empty or overwrite the header of a safetensors file (a copy of the valid one)."""
    data = weights.read_bytes()
    weights.unlink()  # copies can be hard links to the module fixture: never write through them
    damaged = {
        "weights-truncated": data[: len(data) // 2],
        "weights-empty": b"",
        "weights-bad-header": b"PK\x03\x04" + data[4:],  # a zip's magic where the header length was
    }[fault]
    weights.write_bytes(damaged)


# --- running and checking -----------------------------------------------------------------------------


# where each folder command writes a file a link could stand at (names it checks before it writes)
LINKED_NAME = {"train": "metrics.csv", "eval": "results.json", "truncate": "config.json"}


def _lock_of(target: Target, path: Path, is_file: bool) -> Path:
    return file_lock(path) if is_file else folder_lock(path, target.command)


def _write_lock(lock: Path, pid: int) -> None:
    owner = {"pid": pid, "host": socket.gethostname(), "since": time.time(), "command": "lwap (a writer)"}
    lock.write_text(json.dumps(owner) + "\n", encoding="utf-8")


def _output_fault(world: World, target: Target, fault: str, path: Path, is_file: bool) -> None:
    """What an output target meets: a user's folder or file, a link inside an lwap folder, a lock held
    by a live writer (this test's parent process) or left by a dead one (a finished `true`)."""
    if fault == "not-lwaps":
        if is_file:
            path.write_bytes(b"a user's own file\n")
        else:
            path.mkdir()
            (path / "notes.txt").write_text("a user's own notes\n", encoding="utf-8")
        return
    if not is_file:
        path.mkdir()
    if fault == "link-inside":
        marker = {"made_by": "lwap", "command": target.command, "run_id": "0" * 32, "version": "0.1.0"}
        (path / OUTPUT_MARKER).write_text(json.dumps(marker), encoding="utf-8")
        users = world.root / "users-file.txt"
        users.write_text("a user's file a link leads to\n", encoding="utf-8")
        (path / LINKED_NAME[target.command]).symlink_to(users)
    elif fault == "live-lock":
        _write_lock(_lock_of(target, path, is_file), os.getppid())
    else:  # stale-lock
        finished = subprocess.Popen(["true"])
        finished.wait()
        _write_lock(_lock_of(target, path, is_file), finished.pid)


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root`: kind, and for files size, mtime and content hash; links their target."""
    state: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            key = str(path.relative_to(root))
            mode = path.lstat().st_mode
            if path.is_symlink():
                state[key] = ("link", os.readlink(path))
            elif path.is_dir():
                state[key] = ("dir",)
            elif not stat.S_ISREG(mode):  # a FIFO: reading it would block
                state[key] = ("special", stat.S_IFMT(mode))
            else:
                status = path.stat()
                digest = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
                state[key] = ("file", status.st_size, status.st_mtime_ns, digest)
    return state


class ReachedTheLoop(Exception):
    """Raised instead of running the optimisation loop (see `_train_until_the_loop`)."""

    def __init__(self, trainer: object, resume_from_checkpoint: str | None) -> None:
        super().__init__("reached trainer.train")
        self.trainer, self.resume_from_checkpoint = trainer, resume_from_checkpoint


def _train_until_the_loop(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> ReachedTheLoop:
    """Run `lwap train` for real up to `trainer.train`: config read, output folder prepared, data read,
    backbone loaded, checkpoint found. The loop itself opens no path the user gave (a full run costs
    10-20 s here; tests/test_train_run.py runs those)."""
    from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer

    def stop(self: object, resume_from_checkpoint: str | None = None, **_: object) -> None:
        raise ReachedTheLoop(self, resume_from_checkpoint)

    monkeypatch.setattr(SentenceTransformerTrainer, "train", stop)
    with pytest.raises(ReachedTheLoop) as reached:
        main(argv)
    return reached.value


def _run(argv: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse
        code = stop.code if isinstance(stop.code, int) else 1
    return code, capfd.readouterr().err


def check_error(world: World, target: Target, fault: Fault, path: Path, capfd, monkeypatch) -> None:
    argv, env = world.command(target, path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = snapshot(world.root)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # closed: a prompt reads EOF and fails the cell
    code, err = _run(argv, capfd)
    assert not list(world.root.rglob(MARKER)), "the folder's code ran"
    assert "Traceback" not in err, err
    lines = err.splitlines()  # a library's progress bar before the refusal is a line too (issue 67)
    assert code == 2 and len(lines) == 1, f"exit {code}, stderr:\n{err}"
    line = lines[0]
    assert line.startswith(f"lwap {target.command}: error: "), line
    assert str(path) in line, f"the error does not name {path}: {line}"
    assert re.search(fault.says, line), f"the error does not say what was expected ({fault.says}): {line}"
    assert snapshot(world.root) == before, "the failed command changed or left files"


def check_works(world: World, target: Target, path: Path, capfd, monkeypatch, fault: str = "") -> None:
    argv, env = world.command(target, path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = snapshot(world.root)
    if fault == "stale-lock":  # the dead writer's lock is taken over: replaced, then removed
        is_file = target.role == OUTPUT_FILE
        before.pop(str(_lock_of(target, path, is_file).relative_to(world.root)))
    if target.command == "card":  # rewriting the run's model card is its job
        before.pop(str((path / "model" / "README.md").relative_to(world.root)))
    if target.command == "train":
        reached = _train_until_the_loop(monkeypatch, argv)
        err = capfd.readouterr().err
        assert len(reached.trainer.train_dataset) == len(TRAIN_SENTENCES)
        out = {"output.dir": path, "resume": path.parent.parent}.get(target.dest, world.root / "run")
        assert (out / "config.yaml").is_file()
        if target.dest == "resume":
            assert reached.resume_from_checkpoint == str(path)
    else:
        code, err = _run(argv, capfd)
        assert code == 0, err
        if target.dest == "output" and target.command == "encode":
            assert np.load(path).shape == (len(SENTENCES), 32)
        if target.dest == "input":
            rows = len(path.read_bytes().splitlines())
            assert np.load(world.root / "out.npy").shape == (rows, 32)
        if target.command == "eval" and target.dest == "output":
            assert (path / "results.json").is_file()
        if target.command == "mine":
            mined = path if target.dest == "output" else world.root / "mined.csv"
            assert mined.read_text(encoding="utf-8").startswith("sent0,sent1,hard_neg\n")
        if target.command == "truncate":
            small = path if target.dest == "output" else world.root / "small"
            assert json.loads((small / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"] == 1
    if fault == "stale-lock":
        assert "took over the lock" in err, err
    after = snapshot(world.root)
    assert {key: after.get(key) for key in before} == before, "a file that existed before was changed"
    assert not [key for key in after if ".partial-" in key], "a temporary file was left behind"


CELLS = [pytest.param(t, f, e, id=cell_id(t, f)) for t, f, e in cells()]


@pytest.mark.parametrize(("target", "fault", "expected"), CELLS)
def test_path_cell(
    target: Target,
    fault: Fault,
    expected: str,
    tmp_path: Path,
    tiny_lwap: Path,
    tiny_bert: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if expected.startswith("n/a"):
        return  # listed in the doc as not applying; nothing to run
    world = World(tmp_path, tiny_lwap, tiny_bert)
    path = make_fault(world, target, fault.name, request)
    if expected == "works":
        check_works(world, target, path, capfd, monkeypatch, fault.name)
    else:
        check_error(world, target, fault, path, capfd, monkeypatch)


# --- the matrix covers every option, key and variable -------------------------------------------------


def _argparse_dests() -> set[str]:
    """'DEST' of the top-level options and 'COMMAND DEST' of every subcommand option."""
    import argparse

    parser = build_parser()
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                found |= {f"{command} {a.dest}" for a in sub._actions if a.dest != "help"}
        found.add(action.dest)
    return found


def _variables() -> set[str]:
    """LWAP_* environment variables named anywhere in lwap's sources."""
    sources = [p for folder in ("lwap", "train", "eval") for p in (REPO / folder).rglob("*.py")]
    return {name for p in sources for name in re.findall(r"\"(LWAP_[A-Z_]+)\"", p.read_text("utf-8"))}


def test_every_option_and_key_is_classified() -> None:
    """Each argparse option and config key is a row of the matrix or named in NOT_PATHS with a reason."""
    rows = {
        f"{t.command} {t.dest}" if t.where == "argument" else t.dest
        for t in TARGETS
        if t.where != "environment"
    }
    options = _argparse_dests() | set(all_keys())
    unclassified = sorted(options - rows - set(NOT_PATHS))
    assert not unclassified, (
        f"classify {unclassified} in tests/path_matrix.py: a TARGETS row if it names a file or folder, "
        "else NOT_PATHS with the reason"
    )
    assert not (rows | set(NOT_PATHS)) - options, "rows or NOT_PATHS entries name options that are gone"
    variables = {t.dest for t in TARGETS if t.where == "environment"}
    variables |= set(NOT_PATH_VARIABLES)
    assert _variables() == variables, f"LWAP_* variables {_variables()} vs matrix rows and {variables}"


def test_reliability_doc_lists_the_matrix() -> None:
    """docs/RELIABILITY.md shows the matrix as declared (regenerate: python tests/path_matrix.py)."""
    assert current_doc_section() == doc_section(), "run: python tests/path_matrix.py"
