"""Trainer callbacks lwap adds to `SentenceTransformerTrainer`: what the transformers callbacks don't do.

- `StopOnSignal`: Ctrl-C (SIGINT), SIGTERM or SIGHUP (a closed terminal) → finish the current step, save a
  checkpoint, stop (in a process group: at the next step `StopOnNonFinite` checks, so that every process
  stops at the same one); `lwap.train.run` then ends as the CLI ends on each (exit 130, 143, 129).
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

from lwap.checks.files import atomic_path


class StopOnSignal(TrainerCallback):
    """First SIGINT/SIGTERM/SIGHUP: checkpoint at the end of the current step and stop (`signum` says which
    came); a second Ctrl-C aborts."""

    SIGNALS = tuple(getattr(signal, s) for s in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, s))

    def __init__(self) -> None:
        self.requested = False
        self.signum: int | None = None
        self.stopped_at_step: int | None = None
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            if signum == signal.SIGINT:  # Ctrl-C twice: give up on the checkpoint
                raise KeyboardInterrupt
            return  # SIGTERM after Ctrl-C is torchrun forwarding it: keep saving
        self.requested = True
        self.signum = signum
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
        # alone, a signal stops at this step; in a process group every process must stop at the same step,
        # so StopOnNonFinite reduces this flag with its own, at the steps it checks (see its docstring)
        if self.requested and not process_group_exists():
            self.stop_here(args, state, control)

    def stop_here(self, args: TrainingArguments, state: TrainerState, control: TrainerControl) -> None:
        """Checkpoint this step and stop (StopOnNonFinite cancels the checkpoint of a diverged step)."""
        control.should_save = True
        control.should_training_stop = True
        self.stopped_at_step = state.global_step

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        """A stopped run is not finished, so transformers' end of training, which follows this save, must
        leave it as it is: not load the best weights (nothing uses them) and, with `save_total_limit: 1`,
        not delete every checkpoint but the best, the one just saved to resume from among them (found when
        a SIGTERM sent a frontier cell back 73 steps, to its best). Both key on the best checkpoint in
        the trainer's state, which the checkpoint has recorded by now (its trainer_state.json, what
        `--resume` reads): this process forgets it."""
        if self.stopped_at_step == state.global_step:
            state.best_model_checkpoint = None

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}


def process_group_exists() -> bool:
    """Whether this process is in a torch.distributed group (torchrun, even with one process).

    Every multi-process behaviour (gathered negatives, the flag collectives, the shared dev score, the
    final barrier) keys on this, not on world_size > 1: a one-process torchrun (the one-GPU nccl test)
    then runs them all.
    """
    return torch.distributed.is_available() and torch.distributed.is_initialized()


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


class ShareDevScores(TrainerCallback):
    """In a process group, every process takes process 0's evaluation metrics.

    transformers decides "new best" (and lwap's SelectTheBest whether to checkpoint) in each process from
    its own metrics, and a checkpoint is a collective step: processes that ever disagreed would hang or
    keep different steps. sentence-transformers ≥ 6.2 broadcasts the evaluator's metrics itself; 6.0/6.1
    let every process evaluate on its own, where kernels may round differently. Listed first, so every
    later `on_evaluate` (and transformers' best-metric update, which reads the same dict) sees process
    0's numbers.
    """

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        metrics = kw.get("metrics")
        if metrics is None or not process_group_exists():
            return
        shared = [dict(metrics)]
        torch.distributed.broadcast_object_list(shared, src=0)
        metrics.clear()
        metrics.update(shared[0])
