"""Depth-elastic training under torchrun (two CPU processes, gloo): the depth loss calls the model through
DDP's wrapper, so DDP all-reduces its gradients, with and without GradCache. Each process trains on its
own batches with its own dropout masks; their weights stay identical only if every step's gradients
were synchronised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_train_run import tiny_config

pytestmark = pytest.mark.slow

PROBE = textwrap.dedent(
    """
    import json, os, sys
    from transformers import TrainerCallback
    from lwap.train import load_config
    from lwap.train.run import train

    class Record(TrainerCallback):
        def on_train_end(self, args, state, control, model=None, **kwargs):
            total = sum(float(p.detach().double().abs().sum()) for p in model.parameters())
            rank = os.environ["RANK"]
            with open(os.path.join(sys.argv[2], f"{rank}.json"), "w") as handle:
                json.dump({"weights": total, "steps": state.global_step}, handle)

    train(load_config(sys.argv[1], sys.argv[3:]), callbacks=[Record()])
    """
)


@pytest.mark.parametrize("mini_batch", [None, 4], ids=["one-pass", "gradcache"])
def test_depth_loss_under_ddp_keeps_the_processes_in_step(
    tmp_path: Path, tiny_bert: Path, mini_batch: int | None
) -> None:
    path = tiny_config(
        tmp_path,
        tiny_bert,
        training={"max_steps": 3, "per_device_batch_size": 8, "mini_batch_size": mini_batch},
        output={"save_steps": 3},
    )
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    records = tmp_path / "records"
    records.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", str(probe), str(path)]
    sets = ["objective.depths=[1, 3, 5]", "objective.matryoshka_dims=[32, 8]"]
    done = subprocess.run(
        [*command, str(records), *sets], capture_output=True, text=True, timeout=420, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    zero, one = (json.loads((records / f"{rank}.json").read_text()) for rank in (0, 1))
    assert zero["steps"] == one["steps"] == 3
    assert zero["weights"] == one["weights"]  # the same update on both: gradients all-reduced
    assert (tmp_path / "run" / "model" / "modules.json").is_file()
