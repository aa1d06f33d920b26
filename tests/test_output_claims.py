"""Every output lwap writes is claimed (lwap.checks.output_claim) and locked (lwap.checks.locking): a user's
folder is refused or, with --overwrite, adopted without losing an entry; a file is replaced only with
--overwrite; nothing is written through a link; a second writer is told who holds the target; a dead
writer's lock is taken over with a note; removing a lock never hides the error being raised."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import SENTENCES
from eval_mirror import write_beir

from lwap import build_model
from lwap.checks.locking import LockOwner, _create, claim, command_line
from lwap.checks.output_claim import MARKER, file_lock, folder_lock, read_marker
from lwap.cli import main

WIKI = "$LWAP_DATA_DIR/wiki/wiki_sentences_1m.txt.gz"


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder` with its bytes (a link: where it leads): what "left as it was" means."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        found[key] = (
            f"-> {os.readlink(path)}" if path.is_symlink() else path.read_bytes() if path.is_file() else "/"
        )
    return found


def users_folder(folder: Path, **files: str) -> Path:
    """A folder a user made: notes, and whatever `files` adds (a name lwap writes, to collide)."""
    (folder / "papers").mkdir(parents=True)
    (folder / "papers" / "draft.txt").write_text("my draft\n")
    (folder / "notes.txt").write_text("my notes\n")
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text)
    return folder


def errors(capfd: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capfd.readouterr().err.splitlines() if line.strip()]


def train_config(tmp_path: Path, tiny_bert: Path, out: Path, steps: int = 2) -> Path:
    raw = {
        "output": {"dir": str(out), "save_steps": steps, "save_total_limit": None},
        "model": {"backbone": str(tiny_bert), "pooling": "mean", "max_seq_length": 16},
        "data": {"train": WIKI, "max_examples": 64},
        "objective": {"name": "unsup_simcse"},
        "training": {
            "max_steps": steps,
            "per_device_batch_size": 8,
            "logging_steps": 1,
            "progress_bar": False,
        },
        "eval": {"dev": None, "keep_best": False, "before_training": False},
    }
    path = tmp_path / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def bert_model(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path) -> Path:
    folder = tmp_path_factory.mktemp("bert") / "model"
    build_model(str(tiny_bert), "mean").save(str(folder))
    return folder


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    docs = [{"_id": f"d{i}", "title": "", "text": s} for i, s in enumerate(["apple", "banana", "cherry"])]
    write_beir(tmp_path / "beir", docs, [{"_id": "q0", "text": "apple"}], [("q0", "d0", 1)])
    return tmp_path / "beir"


def eval_argv(model: Path, beir: Path, out: Path) -> list[str]:
    return ["eval", str(model), "--tasks", str(beir), "--output", str(out), "--no-progress"]


# --- a user's folder as a folder output ------------------------------------------------------------------


def test_training_refuses_a_users_folder_and_leaves_it_as_it_was(
    tmp_path: Path, tiny_bert: Path, capfd
) -> None:
    out = users_folder(tmp_path / "mine")
    before = snapshot(out)
    assert main(["train", str(train_config(tmp_path, tiny_bert, out))]) == 2
    lines = errors(capfd)
    assert len(lines) == 1 and str(out) in lines[0] and "--overwrite" in lines[0], lines
    assert "not made by lwap" in lines[0]
    assert snapshot(out) == before


def test_truncate_refuses_a_users_folder_and_leaves_it_as_it_was(
    tmp_path: Path, bert_model: Path, capfd
) -> None:
    out = users_folder(tmp_path / "mine")
    before = snapshot(out)
    assert main(["truncate", str(bert_model), str(out), "--layers", "2"]) == 2
    lines = errors(capfd)
    assert len(lines) == 1 and str(out) in lines[0] and "--overwrite" in lines[0], lines
    assert snapshot(out) == before


def test_eval_refuses_a_users_folder_and_leaves_it_as_it_was(
    tmp_path: Path, fruit_folder: Path, beir: Path, capfd
) -> None:
    out = users_folder(tmp_path / "mine")
    before = snapshot(out)
    assert main(eval_argv(fruit_folder, beir, out)) == 2
    lines = errors(capfd)
    assert len(lines) == 1 and str(out) in lines[0] and "--overwrite" in lines[0], lines
    assert snapshot(out) == before


# --- --overwrite adopts a folder: the user's entries survive, a colliding name is refused -----------------


def test_training_overwrite_keeps_the_users_files_and_refuses_their_config(
    tmp_path: Path, tiny_bert: Path, capfd
) -> None:
    out = users_folder(tmp_path / "mine")
    config = train_config(tmp_path, tiny_bert, out)
    assert main(["train", str(config), "--overwrite"]) == 0
    assert (out / "notes.txt").read_text() == "my notes\n" and (out / "papers" / "draft.txt").is_file()
    marker = read_marker(out)
    assert marker["command"] == "train" and marker["foreign"] == ["notes.txt", "papers"], marker
    assert (out / "model" / "modules.json").is_file()
    assert main(["train", str(config), "--overwrite"]) == 0  # a second overwrite: lwap's own files only
    assert (out / "notes.txt").read_text() == "my notes\n" and (out / "papers" / "draft.txt").is_file()

    clash = users_folder(tmp_path / "theirs", config__yaml="learning_rate: 3\n", metrics__csv="a,b\n")
    before = snapshot(clash)
    capfd.readouterr()
    assert main(["train", str(train_config(tmp_path, tiny_bert, clash)), "--overwrite"]) == 2
    lines = errors(capfd)
    assert len(lines) == 1 and f"{clash / 'config.yaml'} is not lwap's" in lines[0], lines
    assert snapshot(clash) == before


def test_an_earlier_lwaps_run_folder_resumes_and_is_marked(tmp_path: Path, tiny_bert: Path, capfd) -> None:
    """A run folder made before the marker existed (here: a finished run with its marker and model removed,
    as the previous lwap left one whose model write failed) still resumes."""
    out = tmp_path / "run"
    config = train_config(tmp_path, tiny_bert, out)
    assert main(["train", str(config)]) == 0
    (out / MARKER).unlink()
    import shutil

    shutil.rmtree(out / "model")
    capfd.readouterr()
    assert main(["train", str(config), "--resume"]) == 0
    assert "made by an earlier lwap train" in capfd.readouterr().err
    assert read_marker(out)["foreign"] == [] and (out / "model" / "modules.json").is_file()


def test_truncate_overwrite_keeps_the_users_files_and_refuses_their_readme(
    tmp_path: Path, bert_model: Path, capfd
) -> None:
    out = users_folder(tmp_path / "mine")
    argv = ["truncate", str(bert_model), str(out), "--layers", "2"]
    assert main([*argv, "--overwrite"]) == 0
    assert (out / "notes.txt").read_text() == "my notes\n" and (out / "TRUNCATED.md").is_file()
    assert read_marker(out)["foreign"] == ["notes.txt", "papers"]
    capfd.readouterr()
    assert main(argv) == 2  # lwap's own model there now: replaced only with --overwrite
    assert "already exists" in errors(capfd)[-1]
    assert main([*argv[:-1], "3", "--overwrite"]) == 0  # replaced: the user's files stay
    assert "first 3 of" in (out / "TRUNCATED.md").read_text() and (out / "papers" / "draft.txt").is_file()

    clash = users_folder(tmp_path / "theirs", README__md="# my readme\n")
    before = snapshot(clash)
    capfd.readouterr()
    assert main(["truncate", str(bert_model), str(clash), "--layers", "2", "--overwrite"]) == 2
    lines = errors(capfd)
    assert len(lines) == 1 and f"{clash / 'README.md'} is not lwap's" in lines[0], lines
    assert snapshot(clash) == before


def test_eval_overwrite_keeps_the_users_files_and_refuses_their_results(
    tmp_path: Path, fruit_folder: Path, beir: Path, capfd
) -> None:
    out = users_folder(tmp_path / "mine")
    assert main([*eval_argv(fruit_folder, beir, out), "--overwrite"]) == 0
    assert (out / "notes.txt").read_text() == "my notes\n" and (out / "results.json").is_file()
    assert main(eval_argv(fruit_folder, beir, out)) == 0  # lwap's folder now: written again, no flag needed

    clash = users_folder(tmp_path / "theirs", results__md="my results\n")
    before = snapshot(clash)
    capfd.readouterr()
    assert main([*eval_argv(fruit_folder, beir, clash), "--overwrite"]) == 2
    lines = errors(capfd)
    assert len(lines) == 1 and f"{clash / 'results.md'} is not lwap's" in lines[0], lines
    assert snapshot(clash) == before


# --- a file output --------------------------------------------------------------------------------------


@pytest.fixture
def file_commands(tmp_path: Path, fruit_folder: Path) -> dict[str, list[str]]:
    """argv of `lwap encode` and `lwap mine` writing into tmp_path (OUT stands for the output)."""
    text = tmp_path / "in.txt"
    text.write_text("apple\nbanana cherry\n")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sent0,sent1\napple,apple banana\nbanana,banana cherry\ncherry,cherry apple\n")
    return {
        "encode": ["encode", str(fruit_folder), "--input", str(text), "--output", "OUT.npy", "--no-progress"],
        "mine": ["mine", str(pairs), "--model", str(fruit_folder), "--output", "OUT.csv", "--range-max", "3"],
    }


def with_output(argv: list[str], folder: Path) -> tuple[list[str], Path]:
    name = next(a for a in argv if a.startswith("OUT."))
    out = folder / name.replace("OUT", "out")
    return [str(out) if a == name else a for a in argv], out


@pytest.mark.parametrize("command", ["encode", "mine"])
def test_an_existing_output_file_is_replaced_only_with_overwrite(
    command: str, file_commands: dict, tmp_path: Path, capfd
) -> None:
    argv, out = with_output(file_commands[command], tmp_path)
    out.write_bytes(b"someone's file")
    assert main(argv) == 2
    lines = errors(capfd)
    assert len(lines) == 1 and f"{out} already exists; pass --overwrite" in lines[0], lines
    assert out.read_bytes() == b"someone's file"
    assert main([*argv, "--overwrite"]) == 0
    assert out.read_bytes() != b"someone's file" and not file_lock(out).exists()


# --- links inside an output folder --------------------------------------------------------------------------


def test_a_link_in_an_lwap_folder_is_replaced_never_written_through(
    tmp_path: Path, bert_model: Path, fruit_folder: Path, beir: Path, capfd
) -> None:
    """A link where lwap writes (planted in a folder lwap made) is refused or replaced by lwap's own file;
    what it leads to keeps its bytes."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    small = tmp_path / "small"
    argv = ["truncate", str(bert_model), str(small), "--layers", "2"]
    assert main(argv) == 0
    (small / "README.md").unlink()
    (small / "README.md").symlink_to(victim)
    assert main([*argv, "--overwrite"]) == 2  # a name lwap checks before it loads the model: refused
    assert "README.md is a symbolic link" in errors(capfd)[-1]
    (small / "README.md").unlink()
    (small / "model.safetensors").unlink()  # one it finds as it writes the model: the link is replaced
    (small / "model.safetensors").symlink_to(victim)
    assert main([*argv, "--overwrite"]) == 0
    assert not (small / "model.safetensors").is_symlink() and victim.read_bytes() == b"precious"

    results = tmp_path / "results"
    assert main(eval_argv(fruit_folder, beir, results)) == 0
    (results / "results.md").unlink()
    (results / "results.md").symlink_to(victim)
    capfd.readouterr()
    assert main(eval_argv(fruit_folder, beir, results)) == 2
    assert "results.md is a symbolic link" in errors(capfd)[-1]
    assert victim.read_bytes() == b"precious"


# --- locks ------------------------------------------------------------------------------------------------


def plant_lock(path: Path, pid: int, command: str) -> None:
    """A lock naming process `pid` (running `command`), taken now."""
    path.parent.mkdir(parents=True, exist_ok=True)
    assert _create(path, LockOwner(pid, socket.gethostname(), time.time(), command))


def locked_targets(tmp_path: Path, files: dict, bert_model: Path, fruit_folder: Path, beir: Path) -> dict:
    """command -> (argv, the lock its writer takes)."""
    encode, npy = with_output(files["encode"], tmp_path)
    mine, csv = with_output(files["mine"], tmp_path)
    small, results = tmp_path / "small", tmp_path / "results"
    return {
        "encode": (encode, file_lock(npy)),
        "mine": (mine, file_lock(csv)),
        "truncate": (
            ["truncate", str(bert_model), str(small), "--layers", "2"],
            folder_lock(small, "truncate"),
        ),
        "eval": (eval_argv(fruit_folder, beir, results), folder_lock(results, "eval")),
    }


@pytest.mark.parametrize("command", ["encode", "mine", "truncate", "eval"])
def test_a_second_writer_is_told_who_writes_the_target(
    command: str, tmp_path: Path, file_commands: dict, bert_model: Path, fruit_folder: Path, beir: Path, capfd
) -> None:
    argv, lock = locked_targets(tmp_path, file_commands, bert_model, fruit_folder, beir)[command]
    first = subprocess.Popen(["sleep", "60"])
    try:
        plant_lock(lock, first.pid, f"lwap {command} --the-first-writer")
        assert main(argv) == 2
        lines = errors(capfd)
        assert len(lines) == 1 and f"pid {first.pid} on " in lines[0], lines
        assert f"running `lwap {command} --the-first-writer`" in lines[0], lines
        assert lock.exists()  # the first writer's lock is left to it
    finally:
        first.kill()
        first.wait()


@pytest.mark.parametrize("command", ["encode", "mine", "truncate", "eval"])
def test_a_dead_writers_lock_is_taken_over_with_a_note(
    command: str, tmp_path: Path, file_commands: dict, bert_model: Path, fruit_folder: Path, beir: Path, capfd
) -> None:
    argv, lock = locked_targets(tmp_path, file_commands, bert_model, fruit_folder, beir)[command]
    dead = subprocess.Popen(["true"])
    dead.wait()
    plant_lock(lock, dead.pid, f"lwap {command} --a-writer-that-died")
    assert main(argv) == 0
    notes = [line for line in errors(capfd) if "took over the lock" in line]
    assert len(notes) == 1 and f"pid {dead.pid} on " in notes[0], notes
    assert f"`lwap {command} --a-writer-that-died`" in notes[0] and "no longer alive" in notes[0]
    assert not lock.exists()


def test_a_training_run_lock_names_its_command(tmp_path: Path, tiny_bert: Path, capfd) -> None:
    out = tmp_path / "run"
    config = train_config(tmp_path, tiny_bert, out)
    first = subprocess.Popen(["sleep", "60"])
    try:
        plant_lock(out / ".lwap-train.lock", first.pid, f"lwap train {config}")
        assert main(["train", str(config)]) == 2
        lines = errors(capfd)
        assert len(lines) == 1 and f"pid {first.pid} on " in lines[0] and f"`lwap train {config}`" in lines[0]
    finally:
        first.kill()
        first.wait()


def test_the_command_a_lock_records() -> None:
    assert (
        command_line(["/usr/bin/lwap", "encode", "m", "--output", "a b.npy"])
        == "lwap encode m --output 'a b.npy'"
    )
    assert command_line(["/x/lwap/__main__.py", "eval", "m"]) == "lwap eval m"
    assert len(command_line(["lwap", "encode", "x" * 500])) == 200


def test_a_lock_in_a_folder_turned_read_only_does_not_hide_the_error(tmp_path: Path, capfd) -> None:
    """The folder is remounted read-only while the lock is held: the block's own error comes out, the lock
    that cannot be removed is one line on stderr. Needs `mount` (root in a container that allows it)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True
    ).returncode:
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        with pytest.raises(ValueError, match="the real error"), claim(folder / "out.lock"):
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
            raise ValueError("the real error")
        lines = errors(capfd)
        assert len(lines) == 1 and f"could not remove the lock file {folder / 'out.lock'}" in lines[0], lines
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_a_stale_lock_note_is_one_line_in_a_subprocess(tmp_path: Path, fruit_folder: Path) -> None:
    """As a user sees it: `lwap encode` in a process of its own, over a dead writer's lock."""
    text = tmp_path / "in.txt"
    text.write_text("\n".join(SENTENCES[:1]) + "\n")
    out = tmp_path / "out.npy"
    dead = subprocess.Popen(["true"])
    dead.wait()
    plant_lock(file_lock(out), dead.pid, "lwap encode old")
    argv = ["encode", str(fruit_folder), "--input", str(text), "--output", str(out), "--no-progress"]
    done = subprocess.run([sys.executable, "-m", "lwap", *argv], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(notes) == 1 and "took over the lock" in notes[0] and "`lwap encode old`" in notes[0], notes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.npy"]  # the lock is gone
