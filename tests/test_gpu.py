"""The gpu tier (`python -m pytest -m gpu`): what only a CUDA GPU can show. Skipped without one (CI is CPU).

benchmarks/speed/gpu_check.sh runs it on a GPU machine together with the GPU benchmark. Every test here uses a
tiny random BERT or the packaged MiniLM: no hub, no data mirror (the GPU machine reaches neither).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import SENTENCES

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

REPO = Path(__file__).resolve().parents[1]


def sentences_file(tmp_path: Path, n: int = 256) -> Path:
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join((SENTENCES * n)[:n]) + "\n", encoding="utf-8")
    return path


def gpu_config(tmp_path: Path, tiny_bert: Path, name: str = "run", **training) -> Path:
    """A short unsupervised run on CUDA from an in-test sentence file (no data mirror needed)."""
    import yaml

    raw = {
        "output": {"dir": str(tmp_path / name), "save_steps": 4, "save_total_limit": None},
        "model": {"backbone": str(tiny_bert), "pooling": "lwap", "max_seq_length": 24},
        "data": {"train": str(sentences_file(tmp_path))},
        "objective": {"name": "unsup_simcse"},
        "training": {
            "max_steps": 4,
            "per_device_batch_size": 16,
            "learning_rate": 5e-4,
            "logging_steps": 1,
            "progress_bar": False,
            "device": "cuda",
            **training,
        },
        "eval": {"dev": None, "keep_best": False, "before_training": False},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def first_linear(model: torch.nn.Module) -> torch.nn.Module:
    """The backbone's first Linear (a query projection): its output has the autocast dtype."""
    return next(m for m in model[0].modules() if isinstance(m, torch.nn.Linear))


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_training_step_autocasts_on_cuda(tmp_path: Path, tiny_bert: Path, precision: str) -> None:
    from lwap.train import load_config
    from lwap.train.trainer import build_trainer, training_inputs

    config = load_config(gpu_config(tmp_path, tiny_bert, precision=precision))
    out = tmp_path / "out"
    built = build_trainer(config, out, inputs=training_inputs(config, out, checkpoints=False))
    seen: list[tuple[bool, torch.dtype, torch.dtype]] = []

    def record(module, inputs, output) -> None:  # a Linear's output: autocast's dtype (LayerNorm's is fp32)
        seen.append((torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda"), output.dtype))

    first_linear(built.model).register_forward_hook(record)
    before = [p.detach().clone() for p in built.model.parameters() if p.requires_grad]
    built.trainer.train()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    assert seen and all(on and want == dtype and got == dtype for on, want, got in seen)
    assert next(built.model.parameters()).device.type == "cuda"
    if precision == "fp16":
        assert built.trainer.accelerator.scaler is not None  # fp16 trains with a gradient scaler
    after = [p.detach() for p in built.model.parameters() if p.requires_grad]
    assert all(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    losses = [e["loss"] for e in built.trainer.state.log_history if "loss" in e]
    assert losses and all(np.isfinite(losses))


def test_encode_and_search_bf16_on_cuda_within_tolerance(tiny_bert: Path) -> None:
    from lwap import build_model
    from lwap.encoding import encode
    from lwap.eval.beir_data import BeirDataset
    from lwap.eval.search import score_search

    model = build_model(str(tiny_bert), "mean", device="cuda").eval()
    dtypes: list[torch.dtype] = []
    first_linear(model).register_forward_hook(lambda m, i, out: dtypes.append(out.dtype))
    texts = list(dict.fromkeys(SENTENCES)) * 4
    fp32 = encode(model, texts, precision="fp32", normalize=True)
    bf16 = encode(model, texts, precision="bf16", normalize=True)
    assert dtypes[0] == torch.float32 and dtypes[-1] == torch.bfloat16  # bf16 really ran on CUDA
    assert bf16.dtype == np.float32
    assert float(np.min(np.sum(fp32 * bf16, axis=1))) > 0.99  # cosine of each bf16 row to its fp32 row

    distinct = list(dict.fromkeys(SENTENCES))  # each query's relevant document is its own text
    corpus = {f"d{i}": ("", text) for i, text in enumerate(distinct)}
    queries = {f"q{i}": text for i, text in enumerate(distinct)}
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(len(distinct))}
    data = BeirDataset("toy", "in-test", "test", corpus, queries, qrels)
    scores = {p: score_search(model, data, precision=p)["ndcg@10"] for p in ("fp32", "bf16")}
    assert scores["fp32"] > 99 and abs(scores["fp32"] - scores["bf16"]) < 1.0, scores


def test_fast_dropout_rate_on_cuda() -> None:
    from lwap.train.fast_dropout import fast_dropout

    x = torch.ones(4096, 1024, device="cuda", requires_grad=True)
    y = fast_dropout(x, 0.1)
    kept = y != 0
    assert y.device.type == "cuda"
    assert abs(1 - kept.float().mean().item() - 0.1) < 0.002
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / (1 - 0.1)), rtol=1e-3, atol=1e-3)
    y.sum().backward()
    assert torch.equal(x.grad != 0, kept)  # the same mask in backward


PROBE = textwrap.dedent(
    """
    import json, sys
    import torch
    from transformers import TrainerCallback
    import lwap.train.run as run_module
    from lwap.train import load_config, train

    class Probe(TrainerCallback):
        seen = {}
        def on_step_end(self, args, state, control, **kw):
            Probe.seen.update(backend=str(torch.distributed.get_backend()), device=str(args.device),
                              steps=state.global_step)

    real_build = run_module.build_trainer

    def build(*args, **kwargs):  # what the multi-process path does, seen from the loss
        built = real_build(*args, **kwargs)
        Probe.seen["gather"] = getattr(built.loss, "loss", built.loss).gather_across_devices

        def seen_by_loss(module, inputs, output):
            Probe.seen.update(ddp=type(module.model).__name__,
                              find_unused=getattr(module.model, "find_unused_parameters", None))

        built.loss.register_forward_hook(seen_by_loss)
        return built

    run_module.build_trainer = build
    summary = train(load_config(sys.argv[1]), callbacks=[Probe()])
    model_there = (run_module.output_path(load_config(sys.argv[1])) / "model").is_dir()
    json.dump({**Probe.seen, "processes": summary["processes"], "model": model_there}, open(sys.argv[2], "w"))
    """
)


def test_torchrun_one_process_nccl(tmp_path: Path, tiny_bert: Path) -> None:
    """torchrun with one process makes an nccl group, and the multi-process path runs on it: DDP without
    find_unused_parameters, negatives gathered, the flag collective at every logged step (logging_steps
    1 here), the final barrier (the model folder is there when train() returns)."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    config = gpu_config(tmp_path, tiny_bert, precision="bf16")
    result = tmp_path / "probe.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=1", str(probe)]
    run = subprocess.run(
        [*command, str(config), str(result)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    seen = json.loads(result.read_text(encoding="utf-8"))
    assert seen["backend"] == "nccl" and seen["device"].startswith("cuda") and seen["steps"] == 4
    assert seen["gather"] and seen["ddp"] == "DistributedDataParallel" and seen["find_unused"] is False
    assert seen["model"]


def test_saved_on_gpu_reloads_on_cpu_with_the_same_embeddings(tmp_path: Path, tiny_bert: Path) -> None:
    from lwap.cli import main
    from lwap.encoding import encode
    from lwap.model import load_model

    assert main(["train", str(gpu_config(tmp_path, tiny_bert, precision="bf16"))]) == 0
    folder = tmp_path / "run" / "model"
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")  # no TF32 in the comparison
    try:
        on_gpu = encode(load_model(folder, device="cuda"), SENTENCES)
        on_cpu = encode(load_model(folder, device="cpu"), SENTENCES)
    finally:
        torch.set_float32_matmul_precision(precision)
    np.testing.assert_allclose(on_cpu, on_gpu, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(
    ("supervised", "negatives"), [(False, 0), (True, 1), (True, 3)], ids=["unsup", "sup", "sup-3-negatives"]
)
def test_mini_batch_loss_equals_full_batch_on_cuda(tiny_bert: Path, supervised: bool, negatives: int) -> None:
    from test_train_mini_batch import (
        test_mini_batches_equal_full_batch_with_dropout,
        test_mini_batches_equal_one_forward_without_dropout,
    )

    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")  # compare float32 with float32, not TF32
    try:
        test_mini_batches_equal_full_batch_with_dropout(
            tiny_bert, supervised, negatives, "lwap", device="cuda"
        )
        test_mini_batches_equal_one_forward_without_dropout(tiny_bert, supervised, negatives, device="cuda")
    finally:
        torch.set_float32_matmul_precision(precision)
