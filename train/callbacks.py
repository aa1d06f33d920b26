"""Trainer callbacks lwap adds to `SentenceTransformerTrainer`: what the transformers callbacks don't do.

- `StopOnSignal`: Ctrl-C (SIGINT) or SIGTERM → finish the current step, save a checkpoint, stop.
  transformers' own `enable_jit_checkpoint` handles SIGTERM only, after a 3 s timer, and saves from
  inside a step; this one saves at a step boundary, exactly what `--resume` continues from.
- `EvaluateAtEnd`: evaluate (and checkpoint) the last step too, so the final weights are always scored
  and can be selected as the best (transformers evaluates only every `eval_steps`).
- `MetricsCsv`: the log history as a CSV, rewritten from the trainer state at each log, so it stays
  consistent after a resume (rows logged after the last checkpoint of a killed run disappear).
- `Timing`: wall time of the training loop and of evaluations, for sentences/second.
"""

from __future__ import annotations

import csv
import signal
import time
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from lwap.files import atomic_path


class StopOnSignal(TrainerCallback):
    """First SIGINT/SIGTERM: checkpoint at the end of the current step and stop; a second Ctrl-C aborts."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self.stopped_at_step: int | None = None
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            if signum == signal.SIGINT:  # Ctrl-C twice: give up on the checkpoint
                raise KeyboardInterrupt
            return  # SIGTERM after Ctrl-C is torchrun forwarding it: keep saving
        self.requested = True
        print(
            f"\nlwap train: {signal.Signals(signum).name} received: saving a checkpoint after this step "
            "(press Ctrl-C again to abort without saving)",
            flush=True,
        )

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ):
        try:
            self._previous = {s: signal.signal(s, self._handler) for s in self.SIGNALS}
        except ValueError:  # not the main thread (e.g. training run from a worker thread): no handler
            self._previous = {}

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        if self._agreed(args):
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at_step = state.global_step

    def _agreed(self, args: TrainingArguments) -> bool:
        """Whether any process was signalled; every process must stop at the same step."""
        # every process group, even torchrun's of one process: that runs the collective each step, so a
        # one-GPU run shows whether it works with the backend (nccl takes CUDA tensors only)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            device = collective_device(str(torch.distributed.get_backend()), args.device)
            flag = torch.tensor([1.0 if self.requested else 0.0], device=device)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            self.requested = bool(flag.item())
        return self.requested

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}


def collective_device(backend: str, process_device: torch.device) -> torch.device:
    """Where a tensor for a collective must live: nccl reduces CUDA tensors only, gloo CPU ones.

    `backend` is torch.distributed.get_backend()'s answer ("nccl", "gloo", or "cpu:gloo,cuda:nccl",
    which serves both); `process_device` is the process's own device (TrainingArguments.device).
    """
    if "nccl" in backend and "gloo" not in backend:
        return process_device
    return torch.device("cpu")


class EvaluateAtEnd(TrainerCallback):
    def __init__(self, evaluate: bool) -> None:
        self.evaluate = evaluate

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        if state.global_step >= state.max_steps:
            control.should_save = True
            if self.evaluate:
                control.should_evaluate = True


class MetricsCsv(TrainerCallback):
    """`metrics.csv`: one row per logged value: step, epoch, metric, value (long format, any metric)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        if state.is_world_process_zero:
            write_metrics_csv(state.log_history, self.path)


def write_metrics_csv(log_history: list[dict[str, Any]], path: Path) -> None:
    with atomic_path(path) as partial, partial.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step", "epoch", "metric", "value"])
        for entry in log_history:
            for key, value in entry.items():
                if key in ("step", "epoch") or not isinstance(value, (int, float)):
                    continue
                writer.writerow([entry.get("step"), entry.get("epoch"), key, value])


class Timing(TrainerCallback):
    """Training-loop wall time, evaluation time and the steps done in this process's run."""

    def __init__(self) -> None:
        self.loop_start = 0.0
        self.loop_seconds = 0.0
        self.eval_seconds = 0.0
        self.start_step = 0
        self.end_step = 0

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ):
        self.loop_start = time.perf_counter()
        self.start_step = state.global_step

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        metrics = kw.get("metrics") or {}
        self.eval_seconds += float(metrics.get("eval_runtime", 0.0))

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        self.loop_seconds = time.perf_counter() - self.loop_start
        self.end_step = state.global_step
