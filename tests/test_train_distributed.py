"""The multi-process path of `lwap train`, run for real: two processes under torchrun on the CPU (gloo).

One test, two launches of the production command (`lwap train`, through `lwap.cli.main`) on a tiny BERT
without dropout and the `cls` pooler (so a step's loss can be recomputed in this process). A probe (PROBE
below) only watches and, where a test must, injects: a scripted STS-B dev score per process, a NaN loss on
process 1.

Launch 1 (6 steps, GradCache mini-batches of 4, STS-B dev every 2 steps, NaN loss on process 1 at step 5):
negatives gathered across the processes (the step-1 loss averaged over the processes equals one process's
loss on the two batches joined), DDP without `find_unused_parameters`, every GradCache replay but the
last of a step in `no_sync`, the "new best" decision shared (process 1 is fed other scores, and would
keep another step), and the divergence on process 1 stopping both processes at that step with its loss
in the message. Launch 2 (`--resume`, from checkpoint-4): finishes, both processes agree on the kept
step, and neither returns before the model folder is complete (the final barrier).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from conftest import make_tiny_bert
from test_train_run import tiny_config

pytestmark = pytest.mark.slow

PROBE = textwrap.dedent(
    """
    import json, math, os, sys
    import torch
    from transformers import TrainerCallback
    import lwap.train.run as run_module
    from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
    from lwap.cli import main

    config, record_dir, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    rank = int(os.environ["RANK"])
    record = {"rank": rank, "sync": [], "losses": []}
    DEV = "eval_stsb-dev_spearman_cosine"
    # each process's STS-B dev score at its i-th evaluation (as sentence-transformers < 6.2, where every
    # process evaluates on its own): alone, process 0 would keep step 4 and process 1 step 2
    SCRIPTED = {"first": {0: [0.1, 0.5], 1: [0.9, 0.1]}, "resume": {0: [0.3], 1: [0.99]}}[mode][rank]
    real_loop = SentenceTransformerTrainer.evaluation_loop

    def scripted_loop(self, *args, **kwargs):
        output = real_loop(self, *args, **kwargs)
        output.metrics[DEV] = SCRIPTED[min(len(record.setdefault("scripted", [])), len(SCRIPTED) - 1)]
        record["scripted"].append(output.metrics[DEV])
        return output

    SentenceTransformerTrainer.evaluation_loop = scripted_loop
    real_build = run_module.build_trainer

    class Probe(TrainerCallback):
        def on_train_end(self, args, state, control, **kw):
            record.update(step=state.global_step, best_step=state.best_global_step, best=state.best_metric)

    def build(*args, **kwargs):
        built = real_build(*args, **kwargs)
        loss, inner = built.loss, built.loss.loss
        record["gather"] = inner.gather_across_devices

        def before(module, inputs):
            if not record["losses"]:
                features = [{k: v.cpu() for k, v in f.items() if torch.is_tensor(v)} for f in inputs[0]]
                torch.save(features, os.path.join(record_dir, f"batch-{rank}.pt"))

        def poison(module, inputs, output):  # process 1's loss at step 5 is NaN (its gradients too)
            if mode == "first" and rank == 1 and len(record["losses"]) == 4:
                return output * math.nan

        def after(module, inputs, output):
            record["losses"].append(float(output.detach()))
            record["ddp"] = type(module.model).__name__
            record["find_unused"] = getattr(module.model, "find_unused_parameters", None)

        def replay(module, inputs):  # DDP reads require_backward_grad_sync in the forward
            if torch.is_grad_enabled():
                record["sync"].append(bool(getattr(loss.model, "require_backward_grad_sync", True)))

        loss.register_forward_pre_hook(before)
        loss.register_forward_hook(poison, prepend=True)  # before the divergence check's hook sees it
        loss.register_forward_hook(after)
        built.model.register_forward_pre_hook(replay)
        built.trainer.add_callback(Probe())
        return built

    run_module.build_trainer = build
    extra = ["--resume"] if mode == "resume" else []
    code = 1
    try:
        code = main(["train", config, *extra])
    finally:
        record["code"] = code
        model_folder = os.path.join(os.path.dirname(config), "run", "model")
        record["model_folder_on_return"] = os.path.isdir(model_folder)
        with open(os.path.join(record_dir, f"{mode}-{rank}.json"), "w") as handle:
            json.dump(record, handle)
        if torch.distributed.is_initialized():  # both records written before torchrun stops the other
            torch.distributed.barrier()
    sys.exit(code)
    """
)


def torchrun(probe: Path, config: Path, records: Path, mode: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", str(probe)]
    return subprocess.run(
        [*command, str(config), str(records), mode],
        capture_output=True,
        text=True,
        timeout=420,
        env=env,
        check=False,
    )


def records_of(records: Path, mode: str) -> list[dict]:
    return [json.loads((records / f"{mode}-{rank}.json").read_text(encoding="utf-8")) for rank in (0, 1)]


def no_dropout_bert(folder: Path) -> Path:
    make_tiny_bert(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def joined(batches: list[list[dict[str, torch.Tensor]]]) -> dict[str, torch.Tensor]:
    """The processes' step-1 batches as one batch (padded to the longer one: masked, so no effect)."""
    parts = [batch[0] for batch in batches]  # unsupervised: one column
    length = max(part["input_ids"].shape[1] for part in parts)
    pad = torch.nn.functional.pad
    return {key: torch.cat([pad(p[key], (0, length - p[key].shape[1])) for p in parts]) for key in parts[0]}


def test_two_processes_end_to_end(tmp_path: Path) -> None:
    from lwap.train import load_config
    from lwap.train.losses import SimCSELoss
    from lwap.train.trainer import initial_model

    backbone = no_dropout_bert(tmp_path / "bert")
    path = tiny_config(
        tmp_path,
        backbone,
        model={"pooling": "cls"},  # no random op in training (lwap's RReLU draws slopes): recomputable
        training={"max_steps": 6, "per_device_batch_size": 8, "mini_batch_size": 4},
        output={"save_steps": 6},
        eval={"dev": "stsb", "keep_best": True, "before_training": False, "eval_steps": 2},
    )
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    records = tmp_path / "records"
    records.mkdir()

    first = torchrun(probe, path, records, "first")
    assert first.returncode != 0, first.stdout[-3000:]
    zero, one = records_of(records, "first")
    assert zero["code"] == one["code"] == 2
    message = "training diverged at step 5: the training loss is nan on process 1"
    assert message in first.stderr, first.stderr[-3000:]
    assert zero["step"] == one["step"] == 5  # both stopped there
    assert zero["losses"][4] == zero["losses"][4] and one["losses"][4] != one["losses"][4]  # finite / NaN

    assert zero["gather"] and one["gather"]
    assert zero["ddp"] == "DistributedDataParallel" and zero["find_unused"] is False
    # 8 rows as 2 mini-batches, twice (two views): DDP syncs at the step's last replay only
    assert zero["sync"][:4] == [False, False, False, True] and len(zero["sync"]) % 4 == 0
    assert zero["sync"] == [False, False, False, True] * (len(zero["sync"]) // 4)

    # the shared "best": process 0's scores (0.1, 0.5) in both processes, though process 1 saw 0.9, 0.1
    assert one["scripted"] == [0.9, 0.1]
    assert (zero["best_step"], zero["best"]) == (one["best_step"], one["best"]) == (4, 0.5)
    out = tmp_path / "run"
    assert (out / "checkpoints" / "checkpoint-4").is_dir() and not (out / "model").exists()

    config = load_config(path)
    model = initial_model(config).train()  # the weights of step 1 in both processes
    batches = [torch.load(records / f"batch-{rank}.pt") for rank in (0, 1)]
    with torch.no_grad():
        local = SimCSELoss(model)([dict(batches[0][0])], torch.zeros(8)).item()  # 8 candidates, not 16
        alone = SimCSELoss(model)([joined(batches)], torch.zeros(16)).item()
    assert alone == pytest.approx((zero["losses"][0] + one["losses"][0]) / 2, abs=1e-5)
    assert abs(local - zero["losses"][0]) > 0.1  # (≈ log 8 against ≈ log 16 here)

    second = torchrun(probe, path, records, "resume")
    assert second.returncode == 0, second.stderr[-3000:]
    zero, one = records_of(records, "resume")
    assert zero["code"] == one["code"] == 0 and zero["step"] == one["step"] == 6
    assert one["scripted"] == [0.99]  # process 1 alone would call step 6 a new best
    assert (zero["best_step"], zero["best"]) == (one["best_step"], one["best"]) == (4, 0.5)
    assert zero["model_folder_on_return"] and one["model_folder_on_return"]  # the final barrier
    summary = json.loads((out / "train_summary.json").read_text(encoding="utf-8"))
    assert summary["resumed_from"].endswith("checkpoint-4") and summary["steps_this_run"] == 2
    assert (summary["processes"], summary["final_model_step"]) == (2, 4)
