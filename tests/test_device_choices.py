"""The GPU fixes, tested where their logic runs on the CPU: which device a collective, an autocast or
the training uses; DataParallel refused; fp16 and TF32; CPU levers kept off CUDA; BERT's pooler frozen;
the cls MLP kept at inference. The same paths on a real GPU: tests/test_gpu.py (`-m gpu`)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import SENTENCES
from test_train_run import tiny_config

from lwap import build_model
from lwap.cli import main
from lwap.errors import ConfigError
from lwap.train import load_config
from lwap.train.callbacks import StopOnSignal, collective_device
from lwap.train.fast_dropout import FastDropout
from lwap.train.losses import SimCSELoss
from lwap.train.trainer import (
    apply_device_settings,
    check_one_device_per_process,
    training_inputs,
    training_on_cuda,
)

CUDA0 = torch.device("cuda", 0)


def test_collective_device_follows_the_backend() -> None:
    assert collective_device("nccl", CUDA0) == CUDA0  # nccl reduces CUDA tensors only
    assert collective_device("gloo", torch.device("cpu")) == torch.device("cpu")
    assert collective_device("gloo", CUDA0) == torch.device("cpu")  # gloo on a GPU machine (device cpu)
    assert collective_device("cpu:gloo,cuda:nccl", CUDA0) == torch.device("cpu")


def test_stop_flag_all_reduced_in_a_gloo_group(tmp_path: Path) -> None:
    """In a process group (here of one process), the signal flag travels in StopOnNonFinite's collective:
    a signal stops at the next checked step, not at once; without a group StopOnSignal stops at once."""
    from transformers import TrainerControl, TrainerState

    from lwap.train.divergence import StopOnNonFinite

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    args = SimpleNamespace(device=torch.device("cpu"))
    state = TrainerState()
    state.global_step, state.max_steps = 3, 10
    torch.distributed.init_process_group("gloo", rank=0, world_size=1)
    try:
        stop = StopOnSignal()
        checks = StopOnNonFinite(torch.nn.Identity(), None, signal=stop)
        stop.requested = True
        control = TrainerControl()
        stop.on_step_end(args, state, control)
        checks.on_step_end(args, state, control)
        assert not control.should_training_stop and stop.stopped_at_step is None  # not a checked step
        control.should_log = True
        checks.on_step_end(args, state, control)
        assert control.should_training_stop and control.should_save and stop.stopped_at_step == 3
    finally:
        torch.distributed.destroy_process_group()
    stop, control = StopOnSignal(), TrainerControl()
    stop.requested = True
    stop.on_step_end(args, state, control)
    assert control.should_training_stop and control.should_save and stop.stopped_at_step == 3


class _FakeModel:
    """What lwap's encode reads of a SentenceTransformer, on a chosen device."""

    def __init__(self, device: str) -> None:
        self.device = torch.device(device)

    def get_embedding_dimension(self) -> int:
        return 2

    def encode(self, sentences, **kwargs) -> np.ndarray:
        return np.ones((len(sentences), 2), dtype=np.float32)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_autocast_follows_the_model_device(monkeypatch: pytest.MonkeyPatch, device: str) -> None:
    import lwap.encoding
    from lwap.encoding import autocast

    assert autocast("bf16", torch.device(device)).device == device
    assert autocast("bf16", f"{device}:0" if device == "cuda" else device).device == device
    chosen: list[str] = []
    real = lwap.encoding.autocast

    def recording(precision: str, where: str | torch.device = "cpu"):
        chosen.append(torch.device(where).type)
        return real("fp32", where)

    monkeypatch.setattr(lwap.encoding, "autocast", recording)
    lwap.encoding.encode(_FakeModel(device), ["a", "b"], precision="bf16")
    assert chosen == [device]


def test_eval_autocasts_on_the_model_device(monkeypatch: pytest.MonkeyPatch) -> None:
    import lwap.eval.mteb_tasks as mteb_tasks
    import lwap.eval.search as search

    chosen: list[str] = []

    def recording(precision: str, where: str | torch.device = "cpu"):
        import contextlib

        chosen.append(torch.device(where).type)
        return contextlib.nullcontext()

    monkeypatch.setattr(search, "autocast", recording)
    monkeypatch.setattr(mteb_tasks, "autocast", recording)
    source = Path(search.__file__).read_text(encoding="utf-8") + Path(mteb_tasks.__file__).read_text("utf-8")
    assert 'autocast("cpu"' not in source  # no hard-coded device type left
    # mteb's own wrapper's encode stubbed (the fake model has no tokenizer); lwap's subclass around it runs
    parent = mteb_tasks._CountingWrapper.__mro__[1]
    monkeypatch.setattr(parent, "encode", lambda self, inputs, **kw: np.ones((1, 2), dtype=np.float32))
    wrapper = object.__new__(mteb_tasks._CountingWrapper)
    wrapper.model, wrapper.precision, wrapper.encoded = _FakeModel("cuda"), "bf16", {}
    wrapper.encode(["a"], task_metadata=SimpleNamespace(name="t"))
    assert chosen == ["cuda"]
    scores = search._cosine_fp32(torch.ones(2, 3, dtype=torch.bfloat16), torch.ones(4, 3))
    assert scores.dtype == torch.float32


def test_device_choice() -> None:
    assert training_on_cuda("auto", True) and training_on_cuda("cuda", True)
    assert not training_on_cuda("auto", False) and not training_on_cuda("cpu", True)
    with pytest.raises(ConfigError, match=r"training\.device is cuda"):
        training_on_cuda("cuda", False)


def test_one_process_with_several_gpus_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"torchrun --nproc_per_node=4 .*CUDA_VISIBLE_DEVICES"):
        check_one_device_per_process(4, 1)
    check_one_device_per_process(4, 4)  # torchrun: one GPU per process
    check_one_device_per_process(1, 1)
    check_one_device_per_process(0, 1)


def test_data_parallel_refused_by_lwap_train(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A faked 2-GPU process: `lwap train` exits 2 with one line, before any output folder is made."""
    from transformers import TrainingArguments

    monkeypatch.setattr(TrainingArguments, "n_gpu", property(lambda self: 2))
    config = tiny_config(tmp_path, tiny_bert)
    assert main(["train", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "DataParallel" in err[0] and "torchrun --nproc_per_node=2" in err[0]
    assert not (tmp_path / "run").exists()


def test_fp16_refused_on_the_cpu(tmp_path: Path, tiny_bert: Path) -> None:
    config = load_config(tiny_config(tmp_path, tiny_bert, training={"precision": "fp16", "device": "cpu"}))
    with pytest.raises(ConfigError, match="fp16 needs a CUDA GPU"):
        training_inputs(config, tmp_path / "out")


def test_device_option_of_lwap_train(tmp_path: Path, tiny_bert: Path) -> None:
    """--device cpu trains on the CPU and is recorded as training.device."""
    config = tiny_config(tmp_path, tiny_bert, training={"max_steps": 2})
    assert main(["train", str(config), "--device", "cpu"]) == 0
    summary = json.loads((tmp_path / "run" / "train_summary.json").read_text(encoding="utf-8"))
    assert summary["config"]["training"]["device"] == "cpu"


def test_cpu_levers_by_device(tiny_bert: Path, tmp_path: Path, capsys) -> None:
    config = load_config(
        tiny_config(tmp_path, tiny_bert, training={"attention": "eager", "fast_dropout": True})
    )
    model = build_model(str(tiny_bert), "mean")
    apply_device_settings(config, model, on_cuda=True, say=True)
    assert not any(isinstance(m, FastDropout) for m in model.modules())  # skipped on CUDA
    assert model[0].model.config._attn_implementation != "eager"
    assert "skipped on CUDA" in capsys.readouterr().out
    apply_device_settings(config, model, on_cuda=False, say=True)  # the CPU: applied, as before
    assert any(isinstance(m, FastDropout) for m in model.modules())


@pytest.mark.parametrize("tf32", [True, False])
def test_tf32_set_for_training_and_restored_after(tf32: bool) -> None:
    """TF32 is set when training begins and put back when it ends or fails (run.py calls restore)."""
    from lwap.train.precision import Tf32ForTraining

    before = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
    callback = Tf32ForTraining(tf32)
    try:
        callback.on_train_begin(None, None, None)
        assert torch.get_float32_matmul_precision() == ("high" if tf32 else "highest")
        assert torch.backends.cudnn.allow_tf32 is tf32
        callback.on_train_end(None, None, None)
        assert (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32) == before
        callback.restore()  # again (run.py's finally): nothing changes
        assert (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32) == before
    finally:
        torch.set_float32_matmul_precision(before[0])
        torch.backends.cudnn.allow_tf32 = before[1]
    Tf32ForTraining(None).on_train_begin(None, None, None)  # the CPU: untouched
    assert torch.get_float32_matmul_precision() == before[0]


def test_tf32_restored_after_a_failed_run(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that fails inside trainer.train() leaves TF32 as it found it (a CUDA run, faked on the CPU:
    the callback is told it trains on CUDA)."""
    from transformers import TrainerCallback

    import lwap.train.trainer as trainer_module
    from lwap.train import train

    real = trainer_module.build_trainer

    def on_cuda(config, out, **kw):
        built = real(config, out, **kw)
        built.tf32.tf32 = True  # as build_trainer makes it on CUDA
        return built

    class Fail(TrainerCallback):
        seen = None

        def on_step_end(self, args, state, control, **kw):
            Fail.seen = torch.get_float32_matmul_precision()
            raise RuntimeError("boom")

    monkeypatch.setattr("lwap.train.run.build_trainer", on_cuda)
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        with pytest.raises(RuntimeError, match="boom"):
            train(
                load_config(tiny_config(tmp_path, tiny_bert, training={"max_steps": 2})), callbacks=[Fail()]
            )
        assert Fail.seen == "high" and torch.get_float32_matmul_precision() == "highest"
    finally:
        torch.set_float32_matmul_precision(before)


@pytest.mark.parametrize("pooling", ["lwap", "cls", "mean"])
def test_every_trainable_parameter_gets_a_gradient(tiny_bert: Path, pooling: str) -> None:
    """So DDP needs no unused-parameter search: BERT's pooler layer, which no pooler reads, is frozen."""
    model = build_model(str(tiny_bert), pooling).train()
    assert not any(p.requires_grad for p in model[0].model.pooler.parameters())
    features = model.preprocess(SENTENCES[:4])
    SimCSELoss(model)([features], torch.zeros(4)).backward()
    unused = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert unused == []


def test_pooler_weights_still_saved(tiny_bert: Path, tmp_path: Path) -> None:
    """Frozen, not removed: saved models keep the pooler's weights, so loading reports nothing missing."""
    from safetensors import safe_open

    model = build_model(str(tiny_bert), "cls")
    model.save(str(tmp_path / "m"))
    with safe_open(str(tmp_path / "m" / "model.safetensors"), "pt") as f:
        assert {"pooler.dense.weight", "pooler.dense.bias"} <= set(f.keys())


def test_cls_mlp_at_inference(tiny_bert: Path, tmp_path: Path) -> None:
    from lwap.model import load_model

    plain = build_model(str(tiny_bert), "cls").eval()
    kept = build_model(str(tiny_bert), "cls", mlp_at_inference=True).eval()
    kept.load_state_dict(plain.state_dict())
    a, b = plain.encode(SENTENCES[:3]), kept.encode(SENTENCES[:3])
    dense = kept[2].dense
    expected = np.tanh(a @ dense.weight.detach().numpy().T + dense.bias.detach().numpy())
    np.testing.assert_allclose(b, expected, atol=1e-5)
    kept.save(str(tmp_path / "kept"))
    np.testing.assert_allclose(load_model(tmp_path / "kept").encode(SENTENCES[:3]), b, atol=1e-6)
    # a model saved before the option existed has no such key: it loads as it was (MLP in training only)
    plain.save(str(tmp_path / "old"))
    config = tmp_path / "old" / "2_TrainingOnlyMLP" / "config.json"
    raw = json.loads(config.read_text(encoding="utf-8"))
    raw.pop("at_inference")
    config.write_text(json.dumps(raw), encoding="utf-8")
    np.testing.assert_allclose(load_model(tmp_path / "old").encode(SENTENCES[:3]), a, atol=1e-6)


def test_simcse_recipe_config() -> None:
    """configs/sup-simcse-bert-base-simcse-recipe.yaml is SimCSE's supervised recipe, number by number."""
    repo = Path(__file__).resolve().parents[1]
    c = load_config(repo / "configs" / "sup-simcse-bert-base-simcse-recipe.yaml")
    assert (c.model.backbone, c.model.pooling, c.model.mlp_at_inference) == ("bert-base-uncased", "cls", True)
    assert c.model.max_seq_length == 32 and c.objective.temperature == 0.05
    assert (c.training.per_device_batch_size, c.training.mini_batch_size) == (512, 128)
    assert (c.training.learning_rate, c.training.epochs, c.training.precision) == (5e-5, 3, "fp16")
    assert c.objective.name == "sup_simcse" and c.objective.hard_negative_weight == 1.0


def test_torch_is_a_range_and_ci_installs_the_cpu_wheel_first() -> None:
    """A cluster's own CUDA torch satisfies lwap's requirement; CI still installs the CPU wheel, before
    lwap, so the range is already met and pip pulls no CUDA build."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    repo = Path(__file__).resolve().parents[1]
    project = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    torch_requirement = next(d for d in project["dependencies"] if d.startswith("torch"))
    assert ">=" in torch_requirement and "==" not in torch_requirement
    ci = (repo / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.index("pip install -q torch==2.13.0") < ci.index('pip install -q -e ".[dev]"')
