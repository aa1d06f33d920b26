"""The training loop as a GPU user meets it, shown on the CPU: no per-step host reads, fp16 overflows
skipped rather than fatal, evaluation and later encoding outside the training autocast, `--device cpu`
never touching a GPU, out-of-memory in one line, data-loading workers. The multi-process path:
tests/test_train_distributed.py."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import SENTENCES
from test_train_run import tiny_config
from transformers import TrainerControl, TrainerState

from lwap.cli import main
from lwap.errors import ConfigError
from lwap.train import load_config, train
from lwap.train.divergence import StopOnNonFinite

CPU = SimpleNamespace(device=torch.device("cpu"))


class _Loss(torch.nn.Module):
    """Returns the value it is given: the loss a step "computed"."""

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return value


def _state(step: int, max_steps: int = 100) -> TrainerState:
    state = TrainerState()
    state.global_step, state.max_steps = step, max_steps
    return state


def test_no_host_read_between_checked_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step transformers neither logs, evaluates nor saves at reads nothing back from the device."""
    loss = _Loss()
    checks = StopOnNonFinite(loss, None)
    model = torch.nn.Linear(2, 2)

    def read(*args, **kwargs):
        raise AssertionError("a host read on an unchecked step")

    with monkeypatch.context() as patched:
        for name in ("item", "cpu", "tolist", "__bool__", "__float__"):
            patched.setattr(torch.Tensor, name, read)
        for step in (1, 2, 3):
            loss(torch.tensor(math.nan if step == 2 else 1.0))
            checks.on_step_end(CPU, _state(step), TrainerControl(), model=model)
    assert checks.diverged is None  # not read yet
    control = TrainerControl(should_log=True)
    loss(torch.tensor(1.0))
    checks.on_step_end(CPU, _state(4), control, model=model)
    assert checks.diverged is not None and checks.diverged.step == 2  # where it went non-finite
    assert checks.diverged.what == "the training loss is nan"
    assert control.should_training_stop and not control.should_save and not control.should_evaluate


def test_fp16_overflow_is_skipped_a_lasting_one_stops() -> None:
    """fp16 (patience 3 here): a non-finite loss that GradScaler skips is no divergence; 3 in a row is."""
    loss = _Loss()
    checks = StopOnNonFinite(loss, None, patience=3)
    for step, value in enumerate([1.0, math.inf, 1.0, math.nan, math.nan, 1.0], start=1):
        loss(torch.tensor(value))
        checks.on_step_end(CPU, _state(step), TrainerControl(should_log=True))
    assert checks.diverged is None
    for step, value in enumerate([math.inf, math.nan, math.nan], start=7):
        loss(torch.tensor(value))
        control = TrainerControl(should_log=True)
        checks.on_step_end(CPU, _state(step), control)
    assert checks.diverged is not None and checks.diverged.step == 7 and control.should_training_stop
    assert checks.diverged.what == "the training loss is inf for 3 steps in a row"


def test_fp16_runs_get_the_overflow_patience(tmp_path: Path, tiny_bert: Path) -> None:
    from lwap.train.divergence import FP16_OVERFLOW_PATIENCE
    from lwap.train.trainer import build_trainer, training_inputs

    config = load_config(tiny_config(tmp_path, tiny_bert, training={"precision": "bf16"}))
    out = tmp_path / "out"
    inputs = training_inputs(config, out, checkpoints=False)  # fp16 inputs would need CUDA
    assert build_trainer(config, out, inputs=inputs).divergence.patience == 1
    config.training.precision = "fp16"  # only its patience is read here: fp16 itself needs CUDA
    assert build_trainer(config, out, inputs=inputs).divergence.patience == FP16_OVERFLOW_PATIENCE > 1


def test_evaluation_and_later_encoding_outside_the_training_autocast(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bf16 training (autocast on the CPU): the STS-B dev selection during training, and encoding with
    the trained model in the same process afterwards, run in float32."""
    import lwap.train.run as run_module

    path = tiny_config(
        tmp_path,
        tiny_bert,
        training={"max_steps": 2, "precision": "bf16"},
        output={"save_steps": 2},
        eval={"dev": "stsb", "keep_best": False, "before_training": True, "eval_steps": 2},
    )
    seen: list[tuple[str, bool, torch.dtype]] = []  # (phase, autocast on, a Linear's output)
    built_here = []
    real = run_module.build_trainer

    class Evaluating:
        """The STS-B dev evaluator, marking the forwards it runs."""

        def __init__(self, inner) -> None:
            self.inner, self.on = inner, False

        def __call__(self, *args, **kwargs):
            self.on = True
            try:
                return self.inner(*args, **kwargs)
            finally:
                self.on = False

        def __getattr__(self, name):
            return getattr(self.inner, name)

    def build(*args, **kwargs):
        built = real(*args, **kwargs)
        evaluator = built.trainer.evaluator = Evaluating(built.trainer.evaluator)
        linear = next(m for m in built.model[0].modules() if isinstance(m, torch.nn.Linear))

        def record(module, inputs, out) -> None:
            phase = "dev" if evaluator.on else "train" if module.training else "other"
            seen.append((phase, torch.is_autocast_enabled("cpu"), out.dtype))

        linear.register_forward_hook(record)
        built_here.append(built)
        return built

    monkeypatch.setattr(run_module, "build_trainer", build)
    train(load_config(path))
    training = [entry for entry in seen if entry[0] == "train"]
    evaluating = [entry for entry in seen if entry[0] == "dev"]
    assert training and all(on and dtype == torch.bfloat16 for _, on, dtype in training)
    assert len(evaluating) > 2 and all(not on and dtype == torch.float32 for _, on, dtype in evaluating)
    seen.clear()
    built_here[0].model.encode(SENTENCES)  # in this process, after train()
    assert seen and all(not on and dtype == torch.float32 for _, on, dtype in seen)


def test_device_cpu_builds_the_model_on_the_cpu(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a GPU machine (faked: torch says CUDA is there), `training.device: cpu` never places the model
    on CUDA, not even while building it (sentence-transformers picks CUDA when it sees one)."""
    from lwap.train.trainer import initial_model

    config = load_config(tiny_config(tmp_path, tiny_bert, training={"device": "cpu"}))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    from sentence_transformers.util import get_device_name

    assert get_device_name().startswith("cuda")  # what a model built without a device would take
    model = initial_model(config)
    assert {p.device.type for p in model.parameters()} == {"cpu"}


def test_out_of_memory_is_one_line_with_a_hint(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers import TrainerCallback

    import lwap.train.run as run_module

    class OutOfMemory(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.7 GiB)")

    real = run_module.build_trainer

    def build(config, out, **kwargs):
        kwargs["callbacks"] = [*kwargs.get("callbacks", ()), OutOfMemory()]
        return real(config, out, **kwargs)

    monkeypatch.setattr(run_module, "build_trainer", build)
    assert main(["train", str(tiny_config(tmp_path, tiny_bert, training={"max_steps": 2}))]) == 2
    err = capsys.readouterr().err  # (above the error: progress bars sentence-transformers drew)
    assert "Traceback" not in err
    err = [line for line in err.splitlines() if "error" in line.lower()]
    assert len(err) == 1 and "out of device memory" in err[0]
    assert "training.mini_batch_size: 8" in err[0] and "per_device_batch_size (now 16" in err[0]


def test_dataloader_workers(tmp_path: Path, tiny_bert: Path) -> None:
    """`training.dataloader_workers`: tokenization in worker processes; the run trains as before."""
    from lwap.train.trainer import build_trainer, training_inputs

    with pytest.raises(ConfigError, match=r"training\.dataloader_workers must be at least 0"):
        load_config(tiny_config(tmp_path, tiny_bert, training={"dataloader_workers": -1}))
    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 2, "dataloader_workers": 1})
    config, out = load_config(path), tmp_path / "out"
    built = build_trainer(config, out, inputs=training_inputs(config, out, checkpoints=False))
    assert built.args.dataloader_num_workers == 1 and built.args.dataloader_persistent_workers
    # training in a fresh process: a worker forked from this test process, which earlier tests filled with
    # OpenVINO and thread pools, can crash (seen once in the whole fast tier); a user's `lwap train` is fresh
    script = (
        "import sys; from lwap.train.config import load_config; "
        "from lwap.train.trainer import build_trainer, training_inputs; "
        "from pathlib import Path; "
        "c, o = load_config(sys.argv[1]), Path(sys.argv[2]); "
        "b = build_trainer(c, o, inputs=training_inputs(c, o, checkpoints=False)); "
        "b.trainer.train(); "
        "print('steps', b.trainer.state.global_step)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "fresh")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "steps 2" in done.stdout


def test_find_unused_parameters_off_unless_the_backbone_is_frozen(tmp_path: Path, tiny_bert: Path) -> None:
    """Explicitly off (transformers would turn it on for a SentenceTransformer); the head warm-up, which
    freezes the backbone, turns it on (its parameters get no gradient then)."""
    from lwap.train.trainer import training_inputs

    config = load_config(tiny_config(tmp_path, tiny_bert))
    assert training_inputs(config, tmp_path / "a").args.ddp_find_unused_parameters is False
    config.training.head_warmup_steps = 2
    assert training_inputs(config, tmp_path / "b").args.ddp_find_unused_parameters is True


def test_training_arguments_are_decided_once(tmp_path: Path, tiny_bert: Path) -> None:
    """`training_arguments` decides every argument (the head's rate, the DDP flag, the sampler, saving);
    nothing lwap adds changes one afterwards: not the trainer's assembly, not its callbacks, not a stop
    by a signal (which keeps its checkpoint beside the best with `save_total_limit: 1`)."""
    from transformers import TrainerCallback

    from lwap.train.sampling import LengthGroupedBatches
    from lwap.train.trainer import build_trainer, training_inputs

    path = tiny_config(
        tmp_path,
        tiny_bert,
        training={
            "max_steps": 6,
            "head_learning_rate_multiplier": 4.0,
            "head_warmup_steps": 1,
            "batch_sampler": "length_grouped",
        },
        output={"save_steps": 2, "save_total_limit": 1},
        eval={"dev": "stsb", "keep_best": True, "before_training": False, "eval_steps": 2},
    )
    config, out = load_config(path), tmp_path / "run"
    inputs = training_inputs(config, out)
    args = inputs.args
    assert args.learning_rate_mapping == {r"^model\.(1)\.": 5e-4 * 4.0} and args.ddp_find_unused_parameters
    assert isinstance(args.batch_sampler, LengthGroupedBatches) and args.save_strategy == "steps"
    decided = repr(args)
    built = build_trainer(config, out, inputs=inputs)

    class SignalAt(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            built.stop.requested = state.global_step == 3  # as Ctrl-C would, before step 4

    built.trainer.add_callback(SignalAt())
    built.trainer.train()
    assert built.stop.stopped_at_step == 4 and repr(built.trainer.args) == decided
    assert (out / "checkpoints" / "checkpoint-4").is_dir()  # the stop's, to resume from

