"""Training runs on the tiny random BERT: outputs, supervised path, output guards, interrupt and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from conftest import SENTENCES

from lwap import build_model, load_model
from lwap.cli import main
from lwap.errors import ConfigError, ModelLoadError, OutputExistsError
from lwap.train import load_config, train
from lwap.train.losses import SimCSELoss
from lwap.train.outputs import is_finished, latest_complete_checkpoint, save_model_atomically

WIKI = "$LWAP_DATA_DIR/wiki/wiki_sentences_1m.txt.gz"
NLI = "$LWAP_DATA_DIR/nli/snli_dev_test_triplets.csv"


def tiny_config(tmp_path: Path, tiny_bert: Path, name: str = "run", **sections: dict) -> Path:
    """A config for a short run on the tiny BERT (no STS-B evaluation unless asked for)."""
    raw = {
        "output": {"dir": str(tmp_path / name), "save_steps": 5, "save_total_limit": None},
        "model": {"backbone": str(tiny_bert), "pooling": "lwap", "max_seq_length": 24},
        "data": {"train": WIKI, "max_examples": 512},
        "objective": {"name": "unsup_simcse"},
        "training": {
            "max_steps": 12,
            "per_device_batch_size": 16,
            "learning_rate": 5e-4,
            "logging_steps": 1,
            "progress_bar": False,
        },
        "eval": {"dev": None, "keep_best": False, "before_training": False},
    }
    for section, values in sections.items():
        raw[section].update(values)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def fixed_batch_loss(model, seed: int = 0) -> float:
    """The unsupervised training loss on a fixed batch with fixed dropout masks."""
    model.train()
    features = model.preprocess(SENTENCES * 2)
    torch.manual_seed(seed)
    with torch.no_grad():
        return SimCSELoss(model).forward([features], torch.zeros(len(SENTENCES) * 2)).item()


def assert_geometry_logged(out: Path, steps: list[int]) -> None:
    """Alignment, uniformity and anisotropy of STS-B dev at every dev evaluation, in metrics.csv and
    TensorBoard; the curves figure draws their trajectory (its second panel)."""
    import csv

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with (out / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    for measure in ("alignment", "uniformity", "anisotropy"):
        name = f"eval_stsb-dev_{measure}"
        logged = {int(r["step"]): float(r["value"]) for r in rows if r["metric"] == name}
        assert sorted(logged) == steps, measure
        assert all(np.isfinite(v) for v in logged.values())
    assert all(float(r["value"]) < 0 for r in rows if r["metric"] == "eval_stsb-dev_uniformity")
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    assert {"eval/stsb-dev_alignment", "eval/stsb-dev_uniformity"} <= set(events.Tags()["scalars"])


@pytest.mark.slow
def test_unsupervised_run_learns_and_leaves_a_loadable_model(tmp_path: Path, tiny_bert: Path) -> None:
    path = tiny_config(
        tmp_path,
        tiny_bert,
        training={"max_steps": 20},
        output={"save_steps": 10},
        # not before training: the random tiny BERT's step 0 can score best, and would then be the model
        # (tests/test_train_faults.py::test_best_at_step_0_saves_the_step_0_weights); here: what it learned
        eval={"dev": "stsb", "keep_best": True, "before_training": False, "eval_steps": 10},
    )
    config = load_config(path)
    torch.manual_seed(config.training.seed)
    from transformers import set_seed

    set_seed(config.training.seed)
    untrained = build_model(str(tiny_bert), "lwap", max_seq_length=24)  # what the run starts from
    summary = train(config, config_path=str(path))

    out = tmp_path / "run"
    assert is_finished(out)
    assert summary["steps"] == 20 and summary["processes"] == 1
    assert [step for step, _ in summary["dev_scores_by_step"]] == [10, 20]
    assert [step for step, _, _ in summary["dev_geometry_by_step"]] == [
        10,
        20,
    ]  # (step, uniformity, alignment)
    assert all(uniformity < 0 <= alignment for _, uniformity, alignment in summary["dev_geometry_by_step"])
    assert summary["best_step"] in (10, 20)
    assert summary["final_model_dev_score"] == summary["best_dev_score"]
    assert summary["sentences_per_second"] > 0 and summary["wall_time_seconds"] > 0
    assert json.loads((out / "train_summary.json").read_text())["config"]["training"]["max_steps"] == 20
    assert (out / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "loss" in (out / "metrics.csv").read_text() and list((out / "tensorboard").iterdir())
    assert_geometry_logged(out, steps=[10, 20])  # every dev evaluation (none before training here)
    assert "SimCSELoss" in (out / "model" / "README.md").read_text()  # the model card

    trained = load_model(out / "model")
    assert trained.max_seq_length == 128  # the backbone's inference length, not the training truncation (24)
    assert fixed_batch_loss(trained) < fixed_batch_loss(untrained) - 0.05
    from sentence_transformers import SentenceTransformer

    plain = SentenceTransformer(str(out / "model"), trust_remote_code=True)
    np.testing.assert_allclose(plain.encode(SENTENCES), trained.encode(SENTENCES), atol=1e-6)

    from lwap.eval.evaluators import stsb_evaluator

    score = stsb_evaluator("dev")(trained)["stsb-dev_spearman_cosine"]
    assert score == pytest.approx(summary["best_dev_score"], abs=1e-6)  # the folder holds the best weights


def test_supervised_triplets_with_hard_negative_weight(tmp_path: Path, tiny_bert: Path) -> None:
    path = tiny_config(
        tmp_path,
        tiny_bert,
        data={"train": NLI, "max_examples": 160},
        objective={"name": "sup_simcse", "hard_negative_weight": 2.0},
        model={"pooling": "cls"},
        training={"max_steps": 6},
    )
    summary = train(load_config(path))
    assert summary["steps"] == 6 and summary["train_examples"] == 160
    assert summary["sentences_per_second"] == pytest.approx(3 * summary["examples_per_second"], rel=0.01)
    model = load_model(tmp_path / "run" / "model")
    assert model.encode(SENTENCES).shape == (len(SENTENCES), 32)


def test_output_folder_guards(tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 2})
    assert main(["train", str(path)]) == 0
    capsys.readouterr()
    assert main(["train", str(path)]) == 2  # a finished model is never silently replaced
    err = capsys.readouterr().err
    assert (
        "already holds a finished model" in err
        and "--overwrite" in err
        and len(err.strip().splitlines()) == 1
    )
    with pytest.raises(OutputExistsError):
        train(load_config(path))
    first = (tmp_path / "run" / "model" / "model.safetensors").stat().st_mtime_ns
    assert main(["train", str(path), "--overwrite"]) == 0
    assert (tmp_path / "run" / "model" / "model.safetensors").stat().st_mtime_ns != first

    unfinished = tiny_config(tmp_path, tiny_bert, name="unfinished")
    (tmp_path / "unfinished" / "checkpoints" / "checkpoint-5").mkdir(parents=True)
    with pytest.raises(ConfigError, match="not made by lwap"):  # no config.yaml: not a folder lwap wrote
        train(load_config(unfinished))
    (tmp_path / "unfinished" / "config.yaml").write_text(unfinished.read_text())  # as a run writes it first
    with pytest.raises(OutputExistsError, match="--resume"):
        train(load_config(unfinished))

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="not writable"):  # also holds for root, unlike a chmod'ed folder
        train(load_config(path, [f"output.dir={blocker / 'out'}"]))
    with pytest.raises(ConfigError, match="is a file"):
        train(load_config(path, [f"output.dir={blocker}"]))


def test_crash_while_saving_never_looks_finished(tmp_path: Path, tiny_bert: Path) -> None:
    model = build_model(str(tiny_bert), "lwap")
    real_save = model.save

    def save_then_crash(folder: str, *args, **kwargs) -> None:
        real_save(folder, *args, **kwargs)  # every file written ...
        raise OSError("disk went away")  # ... but the save did not return

    model.save = save_then_crash
    with pytest.raises(OSError, match="disk went away"):
        save_model_atomically(model, tmp_path)
    assert not is_finished(tmp_path) and list(tmp_path.iterdir()) == []
    with pytest.raises(ModelLoadError):
        load_model(tmp_path / "model")
    model.save = real_save
    save_model_atomically(model, tmp_path)
    assert is_finished(tmp_path) and [p.name for p in tmp_path.iterdir()] == ["model"]


def test_incomplete_checkpoint_is_not_resumed_from(tmp_path: Path) -> None:
    for step in (5, 10):
        folder = tmp_path / "checkpoints" / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "modules.json").write_text("[]")
    (tmp_path / "checkpoints" / "checkpoint-5" / "trainer_state.json").write_text('{"global_step": 5}')
    (tmp_path / "checkpoints" / "checkpoint-10" / "trainer_state.json").write_text('{"global_st')  # cut off
    assert latest_complete_checkpoint(tmp_path).name == "checkpoint-5"


def test_build_trainer_without_checkpoints_trains_and_saves_nothing(tmp_path: Path, tiny_bert: Path) -> None:
    """The seam benchmarks/speed/speed.py times: the `lwap train` trainer, extra callbacks, no checkpoint."""
    from transformers import TrainerCallback

    from lwap.train import build_trainer, training_inputs

    class CountSteps(TrainerCallback):
        steps = 0

        def on_step_end(self, args, state, control, **kwargs):
            CountSteps.steps += 1

    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 4}, output={"save_steps": 2})
    config = load_config(path)
    out = tmp_path / "run"
    inputs = training_inputs(config, out, checkpoints=False)
    built = build_trainer(config, out, inputs=inputs, callbacks=[CountSteps()])
    assert built.trainer.model is built.model and built.trainer.args is built.args
    assert isinstance(built.loss, SimCSELoss) and built.evaluator is None and len(built.dataset) == 512
    built.trainer.train()
    assert CountSteps.steps == 4 and built.timing.end_step == 4 and built.stop.stopped_at_step is None
    assert not (out / "checkpoints").exists() or not any((out / "checkpoints").iterdir())
    assert (out / "metrics.csv").is_file()  # lwap's own callbacks still run
    with pytest.raises(ValueError, match="keep_best"):
        keep_best = {"dev": "stsb", "keep_best": True}
        training_inputs(load_config(tiny_config(tmp_path, tiny_bert, eval=keep_best)), out, checkpoints=False)


KILL_DRIVER = """
import os, signal, sys
from transformers import TrainerCallback
from lwap.train import load_config, train

class KillAt(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no checkpoint: as a crash or an OOM kill

train(load_config(sys.argv[1]), callbacks=[KillAt()])
"""


def run_python(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def embeddings_of(folder: Path) -> np.ndarray:
    return load_model(folder).encode(SENTENCES * 3)


@pytest.mark.slow
def test_sigkill_then_resume_equals_uninterrupted_run(tmp_path: Path, tiny_bert: Path) -> None:
    """Killed at step 8 (last checkpoint: step 5), resumed: same final weights as a run never interrupted.

    Tolerance: exact equality expected and asserted to 1e-6. Resuming restores the weights, AdamW
    moments and LR schedule (float32, bit for bit), the RNG states (dropout, RReLU) and the position in
    the seeded data order, so steps 6-12 repeat the same float operations in the same order on the
    same thread count; 1e-6 leaves room only for a BLAS kernel choosing a different blocking.
    """
    reference = tiny_config(tmp_path, tiny_bert, name="straight")
    assert main(["train", str(reference)]) == 0

    killed = tiny_config(tmp_path, tiny_bert, name="killed")
    driver = tmp_path / "kill_driver.py"
    driver.write_text(KILL_DRIVER)
    crashed = run_python(str(driver), str(killed), "8")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
    out = tmp_path / "killed"
    assert not is_finished(out) and latest_complete_checkpoint(out).name == "checkpoint-5"

    resumed = run_python("-m", "lwap.train", str(killed), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 12 and summary["steps_this_run"] == 7
    assert summary["resumed_from"].endswith("checkpoint-5")
    logged_steps = [step for step, _ in _losses(out)]
    assert logged_steps == list(range(1, 13))  # steps 6-8 of the killed run were redone once, not twice
    np.testing.assert_allclose(
        embeddings_of(out / "model"), embeddings_of(tmp_path / "straight" / "model"), atol=1e-6
    )


def _losses(out: Path) -> list[tuple[int, float]]:
    import csv

    with (out / "metrics.csv").open() as handle:
        return [(int(r["step"]), float(r["value"])) for r in csv.DictReader(handle) if r["metric"] == "loss"]


@pytest.mark.slow
def test_sigint_saves_a_checkpoint_and_resume_finishes(tmp_path: Path, tiny_bert: Path) -> None:
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 100000, "logging_steps": 1})
    out = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "lwap.train", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not (out / "metrics.csv").exists():  # written at the first logged step
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1][-2000:]
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr[-2000:]
    assert "saving a checkpoint" in stdout and "--resume" in stdout
    checkpoint = latest_complete_checkpoint(out)
    assert checkpoint is not None and not is_finished(out)
    stopped = int(checkpoint.name.split("-")[1])
    assert main(["train", str(path), "--resume", "--set", f"training.max_steps={stopped + 2}"]) == 0
    assert json.loads((out / "train_summary.json").read_text())["steps"] == stopped + 2


def test_a_stop_keeps_its_checkpoint_beside_an_older_best(tmp_path: Path, tiny_bert: Path) -> None:
    """save_total_limit 1 with keep_best: a stop at step 3 (the best: step 2, the last evaluation) must
    leave checkpoint-3 to resume from; transformers' end-of-training cleanup kept only the best. The
    signal goes to a child process (SIGNAL_DRIVER), never to pytest's own."""
    path = tiny_config(
        tmp_path,
        tiny_bert,
        training={"max_steps": 6},
        output={"save_steps": 2, "save_total_limit": 1},
        eval={"dev": "stsb", "keep_best": True, "before_training": False, "eval_steps": 2},
    )
    driver = tmp_path / "signal_driver.py"
    driver.write_text(SIGNAL_DRIVER)
    stopped = run_python(str(driver), str(path), "3")
    assert stopped.returncode == 130 and "saving a checkpoint" in stopped.stdout, stopped.stderr[-2000:]
    out = tmp_path / "run"
    assert latest_complete_checkpoint(out).name == "checkpoint-3" and not is_finished(out)
    summary = train(load_config(path), resume=True)  # resumes from the stop, not from the best
    assert summary["resumed_from"].endswith("checkpoint-3") and summary["steps_this_run"] == 3


SIGNAL_DRIVER = """
import os, signal, sys
from transformers import TrainerCallback
from lwap.train import load_config, train

class SignalAt(TrainerCallback):
    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == int(sys.argv[2]) - 1:  # StopOnSignal's handler is installed by now
            os.kill(os.getpid(), signal.SIGINT)

try:
    train(load_config(sys.argv[1]), callbacks=[SignalAt()])
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.slow
def test_torchrun_two_processes(tmp_path: Path, tiny_bert: Path) -> None:
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 4, "per_device_batch_size": 8})
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "-m", "lwap.train", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "global batch 16 in 2 processes" in result.stdout
    summary = json.loads((tmp_path / "run" / "train_summary.json").read_text())
    assert (summary["processes"], summary["global_batch_size"], summary["steps"]) == (2, 16, 4)
    assert summary["config"]["training"]["per_device_batch_size"] == 8
    assert load_model(tmp_path / "run" / "model").encode(SENTENCES).shape == (len(SENTENCES), 32)
