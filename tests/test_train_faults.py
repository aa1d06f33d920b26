"""Faults a long run meets (docs/RELIABILITY.md, Faults): divergence, which step's weights are saved, a
full disk, two runs on one folder. Training on the tiny random BERT."""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import SENTENCES
from test_train_run import tiny_config
from transformers import TrainerCallback, set_seed

from lwap import build_model, load_model
from lwap.checks.files import finite_json, write_json_atomically
from lwap.cli import main
from lwap.errors import OutputWriteError
from lwap.train import load_config, train
from lwap.train.divergence import TrainingDivergedError
from lwap.train.outputs import LOCK_FILE, is_finished, latest_complete_checkpoint

DEV = "stsb-dev_spearman_cosine"
SCORED = {"dev": "stsb", "keep_best": True, "before_training": True, "eval_steps": 2}


def scripted_dev(monkeypatch: pytest.MonkeyPatch, scores: list[float]) -> None:
    """The STS-B dev evaluator, run for real, but reporting `scores[i]` at its i-th evaluation: which step
    is the best is then set by the test, and what is checked is that the saved weights are that step's."""
    from lwap.eval import evaluators

    real = evaluators.stsb_evaluator

    def make(*args, **kwargs):
        evaluator = real(*args, **kwargs)
        base = type(evaluator)
        calls = []

        class Scripted(base):
            def __call__(self, model, *a, **k):
                metrics = base.__call__(self, model, *a, **k)
                metrics[DEV] = scores[len(calls)]
                calls.append(metrics[DEV])
                return metrics

        evaluator.__class__ = Scripted
        return evaluator

    monkeypatch.setattr(evaluators, "stsb_evaluator", make)


def embeddings(folder_or_model) -> np.ndarray:
    model = load_model(folder_or_model) if isinstance(folder_or_model, Path) else folder_or_model
    return model.encode(SENTENCES)


def untrained(tiny_bert: Path, config) -> object:
    """The model a run starts from, built independently of lwap.train (same seed, same head)."""
    set_seed(config.training.seed)
    return build_model(str(tiny_bert), "lwap", max_seq_length=24)


def test_best_at_step_0_saves_the_step_0_weights(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_dev(monkeypatch, [0.9, 0.5, 0.6, 0.4])
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 6}, output={"save_steps": 2}, eval=SCORED)
    config = load_config(path)
    summary = train(config)
    assert (summary["best_step"], summary["final_model_step"], summary["final_model_dev_score"]) == (
        0,
        0,
        0.9,
    )
    out = tmp_path / "run"
    saved = embeddings(out / "model")
    np.testing.assert_allclose(saved, embeddings(untrained(tiny_bert, config)), atol=1e-6)
    assert not np.allclose(saved, embeddings(out / "checkpoints" / "checkpoint-6"), atol=1e-4)  # it trained
    card = (out / "model" / "README.md").read_text()
    assert "| kept checkpoint | step 0, the best Spearman on STS-B dev (the selection set) |" in card
    assert "STS-B dev Spearman: 0.9000 (before training: 0.9000)" in card  # step 0's score


def test_start_competes_false_keeps_the_best_trained_step(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval.start_competes: false`: the rule before step 0 competed (and SimCSE's), so a cell made then
    can be retrained as it was: the untrained model scores best, the best trained step is kept."""
    scripted_dev(monkeypatch, [0.9, 0.5, 0.6, 0.4])
    eval_settings = {**SCORED, "start_competes": False}
    path = tiny_config(
        tmp_path, tiny_bert, training={"max_steps": 6}, output={"save_steps": 2}, eval=eval_settings
    )
    summary = train(load_config(path))
    assert (summary["best_step"], summary["final_model_step"], summary["final_model_dev_score"]) == (
        4,
        4,
        0.6,
    )
    assert summary["dev_score_before"] == 0.9
    out = tmp_path / "run"
    np.testing.assert_allclose(
        embeddings(out / "model"), embeddings(out / "checkpoints" / "checkpoint-4"), atol=1e-6
    )


def test_best_between_checkpoints_is_checkpointed_and_saved(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The best step (2) is evaluated but falls between checkpoints (every 4 steps): it is saved anyway."""
    scripted_dev(monkeypatch, [0.1, 0.7, 0.3, 0.2, 0.25])
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 8}, output={"save_steps": 4}, eval=SCORED)
    summary = train(load_config(path))
    assert (summary["best_step"], summary["final_model_step"]) == (2, 2) and summary["dev_score_moved"]
    out = tmp_path / "run"
    np.testing.assert_allclose(
        embeddings(out / "model"), embeddings(out / "checkpoints" / "checkpoint-2"), atol=1e-6
    )


def test_a_dev_score_that_never_moves_is_said(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 65: a dev set scoring the same at every evaluation (one that points nowhere scores 0.0 at
    each) chose the kept step on nothing: the summary and one line at the end say so."""
    scripted_dev(monkeypatch, [0.0] * 4)
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 6}, output={"save_steps": 2}, eval=SCORED)
    summary = train(load_config(path))
    assert summary["dev_score_moved"] is False
    said = [line for line in capsys.readouterr().err.splitlines() if "never moved" in line]
    assert said == [
        "lwap train: warning: the dev score never moved from 0.0000 in 4 evaluations: check eval.dev "
        "(STS-B dev)"
    ]


class NaNAt(TrainerCallback):
    """Poison one weight before step `step`'s forward pass: its loss is NaN."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step == self.step - 1:
            with torch.no_grad():
                next(model.parameters()).view(-1)[0] = math.nan


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scores", "best"), [([0.9, 0.5, 0.6], 0), ([0.1, 0.2, 0.7], 4)], ids=["best-0", "best-4"]
)
def test_nan_loss_stops_at_that_step_and_the_last_checkpoint_resumes(
    tmp_path: Path,
    tiny_bert: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    scores: list[float],
    best: int,
) -> None:
    """NaN loss at step 5: stopped there, no model, no step-5 checkpoint; checkpoint-4 (finite) resumes,
    and the resumed run's model is the best step's weights."""
    scripted_dev(monkeypatch, [*scores, 0.3, 0.3, 0.3])
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 8}, output={"save_steps": 2}, eval=SCORED)
    config = load_config(path)
    out = tmp_path / "run"
    with pytest.raises(TrainingDivergedError) as stopped:
        train(config, config_path=str(path), callbacks=[NaNAt(5)])
    message = str(stopped.value)
    assert message.startswith("training diverged at step 5: the training loss is nan; stopped without saving")
    assert "training.learning_rate (now 0.0005)" in message and "checkpoint-4" in message
    assert len(message.splitlines()) == 1
    assert not is_finished(out) and not (out / "train_summary.json").exists()
    assert latest_complete_checkpoint(out).name == "checkpoint-4"
    assert not (out / "checkpoints" / "checkpoint-6").exists()
    weights = load_model(out / "checkpoints" / "checkpoint-4")
    assert all(torch.isfinite(p).all() for p in weights.parameters())
    assert "nan" in (out / "metrics.csv").read_text()  # the NaN loss is logged, not hidden by a mean
    assert not (out / LOCK_FILE).exists()

    capsys.readouterr()
    assert main(["train", str(path), "--resume"]) == 0  # the NaN was injected: the resumed run is finite
    summary = json.loads((out / "train_summary.json").read_text())
    assert (summary["steps"], summary["best_step"], summary["final_model_step"]) == (8, best, best)
    expected = untrained(tiny_bert, config) if best == 0 else out / "checkpoints" / f"checkpoint-{best}"
    np.testing.assert_allclose(embeddings(out / "model"), embeddings(expected), atol=1e-6)


def test_nan_dev_score_stops_without_checkpointing_that_step(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_dev(monkeypatch, [0.2, 0.4, math.nan])
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 8}, output={"save_steps": 2}, eval=SCORED)
    with pytest.raises(TrainingDivergedError, match=r"at step 4: the STS-B dev Spearman is nan"):
        train(load_config(path))
    assert latest_complete_checkpoint(tmp_path / "run").name == "checkpoint-2"


def test_diverged_run_exits_2_with_one_line(tmp_path: Path, tiny_bert: Path, capfd) -> None:
    """The issue's case: a far too large learning rate (no injected fault)."""
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 30, "learning_rate": 1e6})
    assert main(["train", str(path)]) == 2
    err = capfd.readouterr().err  # (above the error: progress bars sentence-transformers drew)
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert "Traceback" not in err and len(errors) == 1, err
    assert errors[0].startswith("lwap train: error: training diverged at step "), err


def test_strict_json() -> None:
    data = {"a": math.nan, "b": [1.0, math.inf, {"c": -math.inf}], "d": 0.5, "e": "nan"}
    assert finite_json(data) == {"a": None, "b": [1.0, None, {"c": None}], "d": 0.5, "e": "nan"}


def test_strict_json_file(tmp_path: Path) -> None:
    write_json_atomically({"score": math.nan}, tmp_path / "x.json")
    assert (tmp_path / "x.json").read_text() == '{\n  "score": null\n}\n'


# --- two runs on one output folder ---------------------------------------------------------------------


@pytest.mark.slow
def test_second_run_on_a_live_runs_folder_refuses(tmp_path: Path, tiny_bert: Path, capfd) -> None:
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 100000})
    out = tmp_path / "run"
    first = subprocess.Popen(
        [sys.executable, "-m", "lwap", "train", str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 180
        while not (out / "metrics.csv").exists():  # training has started
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        host = os.uname().nodename
        for extra in ([], ["--resume"], ["--overwrite"]):
            second = subprocess.run(
                [sys.executable, "-m", "lwap", "train", str(path), *extra], capture_output=True, text=True
            )
            lines = second.stderr.strip().splitlines()
            assert second.returncode == 2 and len(lines) == 1, second.stderr
            assert (
                f"output folder {out} is in use by another process (pid {first.pid} on {host}, since "
                in lines[0]
            )
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130 and not (out / LOCK_FILE).exists()  # released: --resume may start
    stopped = int(latest_complete_checkpoint(out).name.split("-")[1])
    assert main(["train", str(path), "--resume", "--set", f"training.max_steps={stopped + 1}"]) == 0


# --- a full disk ------------------------------------------------------------------------------------------


def test_refused_checkpoint_write_keeps_the_previous_one(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An injected ENOSPC while checkpoint-10 is written (no mount needed)."""
    real_save = torch.save

    def full_at_10(obj, target, *args, **kwargs):
        if "checkpoint-10" in str(target):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_save(obj, target, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_at_10)
    path = tiny_config(tmp_path, tiny_bert)
    out = tmp_path / "run"
    with pytest.raises(OutputWriteError) as refused:
        train(load_config(path))
    assert str(refused.value) == (
        f"{out / 'checkpoints' / 'checkpoint-10'}: cannot write (No space left on device); the last complete "
        "checkpoint, checkpoint-5, is intact: free some space, then continue with --resume"
    )
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["checkpoint-5"]
    monkeypatch.setattr(torch, "save", real_save)
    assert main(["train", str(path), "--resume"]) == 0
    assert json.loads((out / "train_summary.json").read_text())["steps"] == 12


@pytest.fixture
def small_disk(tmp_path: Path):
    """A folder on a tmpfs of the size asked for (needs the right to mount: root; else skipped)."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        folder = tmp_path / f"disk-{len(mounted)}"
        folder.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=False)


class FillDiskAfter(TrainerCallback):
    """Once checkpoint `step` is written, fill its file system up to the last 64 KiB."""

    def __init__(self, step: int, ballast: Path) -> None:
        self.step, self.ballast = step, ballast

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            free = os.statvfs(self.ballast.parent).f_bavail * os.statvfs(self.ballast.parent).f_frsize
            with self.ballast.open("wb") as handle:
                handle.write(b"\0" * max(free - 65536, 0))


@pytest.mark.slow
def test_full_disk_during_a_checkpoint_keeps_the_previous_one(
    tmp_path: Path, tiny_bert: Path, small_disk
) -> None:
    """A real full disk (tmpfs): checkpoint-10 cannot be written; checkpoint-5 stays complete and resumes."""
    disk = small_disk("64m")
    path = tiny_config(tmp_path, tiny_bert, output={"dir": str(disk / "run"), "save_steps": 5})
    out = disk / "run"
    ballast = disk / "ballast"
    with pytest.raises(OutputWriteError) as refused:
        train(load_config(path), callbacks=[FillDiskAfter(5, ballast)])
    message = str(refused.value)
    assert message.startswith(f"{out / 'checkpoints' / 'checkpoint-10'}: cannot write (")
    assert "No space left on device" in message and "checkpoint-5, is intact" in message, message
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["checkpoint-5"]
    assert not (out / LOCK_FILE).exists()
    ballast.unlink()
    assert main(["train", str(path), "--resume"]) == 0
    assert json.loads((out / "train_summary.json").read_text())["steps"] == 12


def test_full_disk_is_one_line_and_exit_2_from_every_command(
    tmp_path: Path, tiny_bert: Path, small_disk, capfd
) -> None:
    """`lwap train` (first checkpoint), `lwap encode` (.npy) and `lwap eval --output` on a full tmpfs."""
    disk = small_disk("1m")
    path = tiny_config(tmp_path, tiny_bert, output={"dir": str(disk / "run"), "save_steps": 2})
    assert main(["train", str(path)]) == 2
    errors = [line for line in capfd.readouterr().err.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, errors
    assert errors[0].startswith(
        f"lwap train: error: {disk / 'run' / 'checkpoints' / 'checkpoint-2'}: cannot write"
    )
    assert "no checkpoint was complete yet" in errors[0]
    assert not (disk / "run" / "checkpoints" / "checkpoint-2").exists()

    model = tmp_path / "model"
    build_model(str(tiny_bert), "lwap").save(str(model))
    sentences = tmp_path / "in.txt"
    sentences.write_text("\n".join(SENTENCES * 3000) + "\n")
    (disk / "ballast").write_bytes(b"\0" * (os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize - 4096))
    output = disk / "out.npy"
    assert (
        main(["encode", str(model), "--input", str(sentences), "--output", str(output), "--no-progress"]) == 2
    )
    err = capfd.readouterr().err.strip().splitlines()
    assert err == [f"lwap encode: error: {output}: cannot write embeddings (No space left on device)"], err
    assert not [p.name for p in disk.iterdir() if "out.npy" in p.name]

    results = disk / "results"
    results.mkdir()
    tasks = tmp_path / "beir"
    from eval_mirror import write_beir

    docs = [{"_id": f"d{i}", "title": "", "text": s} for i, s in enumerate(SENTENCES)]
    write_beir(tasks, docs, [{"_id": "q0", "text": "a guitar"}], [("q0", "d0", 1)])
    (disk / "ballast2").write_bytes(b"\0" * (os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize))
    assert main(["eval", str(model), "--tasks", str(tasks), "--output", str(results), "--no-progress"]) == 2
    err = [line for line in capfd.readouterr().err.splitlines() if "error" in line.lower()]
    assert len(err) == 1 and err[0].startswith(f"lwap eval: error: {results}/"), err
    assert err[0].endswith(": cannot write (No space left on device)"), err
    assert not list(results.iterdir())  # nothing half-written


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG])
def test_refused_writes_name_the_file_and_leave_nothing(tmp_path: Path, code: int) -> None:
    """Every atomic output (model folder, summary, metrics, results, .npy) fails the same way."""
    from lwap.checks.files import atomic_path

    target = tmp_path / "results.json"
    with pytest.raises(OutputWriteError) as refused, atomic_path(target) as partial:
        partial.write_text("{")
        raise OSError(code, os.strerror(code))
    assert str(refused.value) == f"{target}: cannot write ({os.strerror(code)})"
    assert list(tmp_path.iterdir()) == []


def test_write_failure_reads_every_writers_report(tmp_path: Path) -> None:
    from lwap.checks.files import write_failure

    rust = RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)")
    assert write_failure(rust) == "No space left on device"
    torch_zip = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534")
    assert write_failure(torch_zip, tmp_path).startswith("torch.save failed: [enforce fail")
    assert "MiB free on that file system" in write_failure(torch_zip, tmp_path)
    assert write_failure(OSError(errno.ENOENT, "No such file or directory")) is None  # not a refused write
    assert write_failure(ValueError("bad value")) is None


def test_refused_model_write_says_how_to_finish(tmp_path: Path, tiny_bert: Path) -> None:
    from lwap.train.outputs import save_model_atomically

    model = build_model(str(tiny_bert), "mean")
    (tmp_path / "checkpoints" / "checkpoint-12").mkdir(parents=True)

    def full(folder: str, *args, **kwargs) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    model.save = full
    with pytest.raises(OutputWriteError) as refused:
        save_model_atomically(model, tmp_path)
    assert str(refused.value) == (
        f"{tmp_path / 'model'}: cannot write (No space left on device); the checkpoints are intact: "
        "free some space, then --resume writes the model"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoints"]


@pytest.mark.slow
def test_resume_after_a_refused_model_write_writes_the_model(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lwap.train import outputs

    real = outputs.save_model_atomically

    def full(model, out):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(model, "save", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
            return real(model, out)

    monkeypatch.setattr(outputs, "save_model_atomically", full)
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 6})
    with pytest.raises(OutputWriteError, match="then --resume writes the model"):
        train(load_config(path))
    out = tmp_path / "run"
    assert not is_finished(out) and latest_complete_checkpoint(out).name == "checkpoint-6"
    monkeypatch.setattr(outputs, "save_model_atomically", real)
    assert main(["train", str(path), "--resume"]) == 0
    assert is_finished(out) and json.loads((out / "train_summary.json").read_text())["steps"] == 6
    np.testing.assert_allclose(  # no step trained on top: the model is checkpoint-6's weights
        embeddings(out / "model"), embeddings(out / "checkpoints" / "checkpoint-6"), atol=1e-6
    )
