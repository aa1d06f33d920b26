"""`--resume` loses nothing (issue 65): the run's config.yaml is compared with the resumed config before
anything is written (a change to the model, its data or its optimisation refused), a checkpoint of another
run is refused, no checkpoint is ever deleted (newer ones are set aside) and SIGTERM/SIGHUP save a
checkpoint as Ctrl-C does. Training on the tiny random BERT."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_train_run import tiny_config
from transformers import TrainerCallback

from lwap.cli import main
from lwap.train import load_config, train
from lwap.train.config import RETIRED_KEYS
from lwap.train.outputs import CONFIG_YAML, latest_complete_checkpoint

MARKER = ".lwap-output.json"  # lwap.checks.output_claim.MARKER (issue 65's output rule writes it)
RUN_FILE = "lwap_run.json"  # lwap.train.checkpoint_integrity.RUN_FILE: the run id in each checkpoint
SET_ASIDE_DIR = "checkpoints-set-aside"  # lwap.train.resume.SET_ASIDE_DIR


class CrashAt(TrainerCallback):
    """A crash (not a user error) at the start of a step: the run ends with its checkpoints, no model."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise RuntimeError(f"crash at step {self.step}")


def crashed_run(tmp_path: Path, tiny_bert: Path, name: str, crash_at: int, run_id: str | None = None) -> Path:
    """A run of the tiny BERT stopped by a crash at `crash_at` (checkpoints every 5 steps); its config."""
    path = tiny_config(tmp_path, tiny_bert, name=name)
    if run_id is not None:  # the output marker as `lwap train` writes it (its run id reaches the checkpoints)
        (tmp_path / name).mkdir()
        (tmp_path / name / MARKER).write_text(json.dumps({"made_by": "lwap", "run_id": run_id}))
    with pytest.raises(RuntimeError, match="crash at step"):
        train(load_config(path), config_path=str(path), callbacks=[CrashAt(crash_at)])
    return path


def error_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_a_model_change_is_refused_before_anything_is_written(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Today's main rewrote config.yaml with the new pooling, then failed in a traceback loading the
    checkpoint into the other model."""
    path = crashed_run(tmp_path, tiny_bert, "run", crash_at=6)
    out = tmp_path / "run"
    recorded = (out / CONFIG_YAML).read_bytes()
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    capsys.readouterr()
    assert main(["train", str(path), "--resume", "--set", "model.pooling=mean"]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1, lines
    assert "model.pooling" in lines[0] and "'lwap'" in lines[0] and "'mean'" in lines[0]
    assert "--set model.pooling=lwap" in lines[0]
    assert (out / CONFIG_YAML).read_bytes() == recorded
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before


def test_an_allowed_change_is_recorded_beside_the_runs_config(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = crashed_run(tmp_path, tiny_bert, "run", crash_at=6)
    out = tmp_path / "run"
    recorded = (out / CONFIG_YAML).read_bytes()
    capsys.readouterr()
    assert main(["train", str(path), "--resume", "--set", "training.max_steps=7"]) == 0
    assert (out / CONFIG_YAML).read_bytes() == recorded  # as the run began
    said = [line for line in error_lines(capsys) if "resumed with" in line]
    assert len(said) == 1 and "training.max_steps 12 → 7" in said[0], said
    (changed,) = (out / "resumed-configs").iterdir()
    assert changed.name == "from-step-5.yaml" and str(changed) in said[0]
    assert yaml.safe_load(changed.read_text())["training"]["max_steps"] == 7
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["resume_changes"] == {"training.max_steps": [12, 7]} and summary["steps"] == 7


def test_which_keys_a_resume_may_change() -> None:
    """The model, its data and the optimisation a checkpoint holds are fixed; the length of the run, the
    dev evaluation, the checkpoints' cadence and the logging are not."""
    from lwap.train.resume import changes_refused_on_resume

    refused = changes_refused_on_resume()
    for key in ("model.backbone", "model.pooling", "data.train", "objective.temperature", "training.seed",
                "training.per_device_batch_size", "training.learning_rate"):
        assert key in refused, key
    for key in ("training.max_steps", "training.epochs", "eval.dev", "output.save_steps",
                "training.logging_steps", "training.device", "training.precision"):
        assert key not in refused, key


def test_a_recorded_config_with_a_retired_key_compares_as_the_key_that_replaced_it(tmp_path: Path) -> None:
    """A run's config.yaml written before `eval.dev` holds the key it replaced (RETIRED_KEYS): read as lwap
    reads it, the same config resumes unchanged, and a real change is still named."""
    from lwap.errors import LwapError
    from lwap.train.resume import check_resumed_config

    path = tiny_config(tmp_path, Path("backbone"), eval={"dev": "stsb", "keep_best": True, "eval_steps": 5})
    config = load_config(path)
    out = tmp_path / "run"
    out.mkdir()
    recorded = config.to_dict()
    del recorded["eval"]["dev"]
    retired = next(old for old, new in RETIRED_KEYS.items() if new == "eval.dev").removeprefix("eval.")
    recorded["eval"][retired] = True  # as runs before eval.dev wrote it
    (out / CONFIG_YAML).write_text(yaml.safe_dump(recorded))
    assert check_resumed_config(out, config) == {}
    changed = load_config(path, ["eval.eval_steps=1"])
    assert check_resumed_config(out, changed) == {"eval.eval_steps": [5, 1]}
    with pytest.raises(LwapError, match=r"objective.temperature is 0.1 here, .* began with 0.05 .*"
                       r"add --set objective.temperature=0.05 to resume it"):
        check_resumed_config(out, load_config(path, ["objective.temperature=0.1"]))


def test_the_newest_resume_record_is_the_config_in_effect(tmp_path: Path, capsys) -> None:
    """The model card describes the run by the config it ended with: config.yaml until a resume changes
    something, then each resume's own record (one that changes nothing again is recorded too)."""
    from lwap.train.outputs import run_config_file
    from lwap.train.resume import record_resumed_config

    config = load_config(tiny_config(tmp_path, Path("backbone")))
    out = tmp_path / "run"
    out.mkdir()
    record_resumed_config(out, config, {}, 5)  # no record yet: the run's config.yaml is written
    assert run_config_file(out) == out / CONFIG_YAML and not (out / "resumed-configs").exists()
    record_resumed_config(out, config, {}, 5)
    assert run_config_file(out) == out / CONFIG_YAML  # nothing changed, nothing recorded
    longer = load_config(tiny_config(tmp_path, Path("backbone")), ["training.max_steps=20"])
    record_resumed_config(out, longer, {"training.max_steps": [12, 20]}, 5)
    assert run_config_file(out).name == "from-step-5.yaml"
    record_resumed_config(out, config, {}, 10)  # back to what the run began with: recorded as well
    assert run_config_file(out).name == "from-step-10.yaml"
    assert yaml.safe_load(run_config_file(out).read_text())["training"]["max_steps"] == 12
    said = [line for line in capsys.readouterr().err.splitlines() if "resumed with" in line]
    assert len(said) == 2 and "training.max_steps 12 → 20" in said[0] and "no change" in said[1], said


def test_a_checkpoint_outside_the_output_folder_is_refused(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Today's main deleted OUT's own checkpoint-10 (newer than the foreign checkpoint-5), then trained on
    from the other run's weights, exit 0."""
    path = crashed_run(tmp_path, tiny_bert, "run", crash_at=11)
    crashed_run(tmp_path, tiny_bert, "other", crash_at=6)
    out = tmp_path / "run"
    capsys.readouterr()
    foreign = tmp_path / "other" / "checkpoints" / "checkpoint-5"
    assert main(["train", str(path), "--resume", str(foreign)]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and str(foreign) in lines[0] and "not one of this run's" in lines[0], lines
    assert (out / "checkpoints" / "checkpoint-10" / "trainer_state.json").is_file()
    assert not (out / "model").exists()


def test_a_checkpoint_of_another_run_is_refused(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A checkpoint copied into OUT/checkpoints from another run: its run id (written at save time from
    the output marker) differs from OUT's."""
    path = crashed_run(tmp_path, tiny_bert, "run", crash_at=11, run_id="a" * 32)
    crashed_run(tmp_path, tiny_bert, "other", crash_at=11, run_id="b" * 32)
    own = tmp_path / "run" / "checkpoints" / "checkpoint-10"
    assert json.loads((own / RUN_FILE).read_text())["run_id"] == json.loads(
        (tmp_path / "run" / MARKER).read_text()
    )["run_id"]
    shutil.rmtree(own)
    shutil.copytree(tmp_path / "other" / "checkpoints" / "checkpoint-10", own)
    capsys.readouterr()
    assert main(["train", str(path), "--resume"]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and "checkpoint-10" in lines[0] and "another run" in lines[0], lines
    assert not (tmp_path / "run" / "model").exists()


@pytest.mark.parametrize("how", ["older-named", "newer-damaged"])
def test_no_checkpoint_is_deleted_by_a_resume(
    how: str, tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resuming from checkpoint-5 while checkpoint-10 exists (named explicitly, or because checkpoint-10 is
    damaged): today's main deleted checkpoint-10; now it is moved aside, whole, and the line says where."""
    path = crashed_run(tmp_path, tiny_bert, "run", crash_at=11)
    out = tmp_path / "run"
    newer = out / "checkpoints" / "checkpoint-10"
    if how == "newer-damaged":
        with (newer / "optimizer.pt").open("r+b") as handle:
            handle.truncate(100)
    files = sorted(p.relative_to(newer).as_posix() for p in newer.rglob("*"))
    capsys.readouterr()
    resume = [str(out / "checkpoints" / "checkpoint-5")] if how == "older-named" else []
    assert main(["train", str(path), "--resume", *resume, "--set", "training.max_steps=7"]) == 0
    (moved,) = (out / SET_ASIDE_DIR).glob("*/checkpoint-10")
    assert sorted(p.relative_to(moved).as_posix() for p in moved.rglob("*")) == files
    said = [line for line in error_lines(capsys) if "set aside" in line]
    assert len(said) == 1 and str(moved.parent) in said[0], said
    assert json.loads((out / "train_summary.json").read_text())["resumed_from"].endswith("checkpoint-5")


SIGNAL_DRIVER = """
import os, signal, sys
from functools import partial
from transformers import TrainerCallback
import lwap.train.run as run
from lwap.cli import main

class SignalAt(TrainerCallback):
    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == 2:  # StopOnSignal's handler is installed by now
            os.kill(os.getpid(), getattr(signal, sys.argv[2]))

run.train = partial(run.train, callbacks=[SignalAt()])  # `lwap train` itself, with the signal sent at step 3
sys.exit(main(["train", sys.argv[1]]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_save_a_checkpoint_and_exit_as_a_shell_reports_them(
    name: str, tmp_path: Path, tiny_bert: Path
) -> None:
    """As Ctrl-C: the step finishes, a checkpoint is saved, `--resume` continues; the exit status is
    128 + the signal's number (143, 129) with one line on stderr, as every other lwap command."""
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 100})
    driver = tmp_path / "driver.py"
    driver.write_text(SIGNAL_DRIVER)
    done = subprocess.run(
        [sys.executable, str(driver), str(path), name], capture_output=True, text=True, timeout=300
    )
    signum = getattr(signal, name)
    assert done.returncode == 128 + signum, done.stderr[-2000:]
    assert f"{name} received: saving a checkpoint" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == f"lwap train: stopped by {name}"
    out = tmp_path / "run"
    assert latest_complete_checkpoint(out).name == "checkpoint-3" and not (out / "model").exists()
    assert main(["train", str(path), "--resume", "--set", "training.max_steps=4"]) == 0
