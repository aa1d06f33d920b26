"""A run that diverges stops at once, and the saved model is always the step the summary names.

- `StopOnNonFinite`: a training loss that is NaN or infinite (fp16: for several steps in a row, see
  `FP16_OVERFLOW_PATIENCE`), weights that went non-finite, or a dev score that is not finite stop
  the run at the next step transformers logs, evaluates or saves at (read there, not every step: no
  per-step host sync), without saving or evaluating that step: every checkpoint on disk has finite
  weights, so `--resume` never continues from a broken one. The error names the step where the loss
  first went non-finite. `lwap train` then says what went non-finite and what to try, and exits 2 without
  a model (`TrainingDivergedError`). transformers' own `logging_nan_inf_filter` would instead log the
  average of earlier losses in place of a NaN and train on.
- `SelectTheBest`: with `eval.keep_best`, the evaluation before training competes too (transformers
  leaves it out: a run that only got worse would keep its least bad trained step; `eval.start_competes:
  false` keeps that rule, to retrain a cell made before this one), and a step that
  scores a new best is checkpointed even between `output.save_steps` (else transformers could not
  reload it, and would keep the last weights under the best step's name).
The weights of step 0, which transformers never checkpoints, are rebuilt by `lwap.train.run` with
`lwap.train.trainer.initial_model` (same seed) for a run whose best score is the one before training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from lwap.errors import LwapError
from lwap.train.callbacks import StopOnSignal, collective_device, process_group_exists
from lwap.train.outputs import CHECKPOINTS_DIR, latest_complete_checkpoint


class TrainingDivergedError(LwapError):
    """Training produced a non-finite loss, weights or dev score; the run stopped without a model."""


@dataclass(frozen=True)
class Divergence:
    step: int
    what: str  # e.g. "the training loss is nan"


# fp16 only: consecutive non-finite losses tolerated as overflows (GradScaler skips those steps and
# lowers its scale); a loss that stays non-finite this long is not an overflow the scaler can cure
FP16_OVERFLOW_PATIENCE = 8


class StopOnNonFinite(TrainerCallback):
    """Stop at a non-finite training loss, weights or dev score (see the module docstring); also the one
    collective that stops every process of a group at the same step on a signal (`StopOnSignal`).

    No host sync per step: the loss is read through a forward hook on the loss module and folded into a
    few numbers on its device every step (the longest run of non-finite losses, where and at which value
    the run that counts began); they are read, with the signal flag (and the weights' finiteness where a
    checkpoint or an evaluation follows), only at steps transformers logs, evaluates or saves at (and the
    last), in one collective under a process group. Each process's slots in it are its own, so a
    divergence on another process is reported with that process's step and loss. A diverged run stops at
    the first such step, before anything is saved or evaluated there: every checkpoint on disk still has
    finite weights.

    fp16: transformers' GradScaler skips a step whose gradients overflow; a non-finite loss then stops
    the run only if it lasts `FP16_OVERFLOW_PATIENCE` steps in a row (bf16 and fp32 stop at the first).
    """

    def __init__(
        self,
        loss: torch.nn.Module,
        dev_metric: str | None,
        signal: StopOnSignal | None = None,
        patience: int = 1,
        dev_name: str = "STS-B dev Spearman",
    ) -> None:
        self.dev_metric = dev_metric
        self.dev_name = dev_name  # how the message names the dev score, e.g. "STS-B dev Spearman"
        self.signal = signal
        self.patience = patience
        self.diverged: Divergence | None = None
        self._bad: torch.Tensor | None = None  # a forward of this step gave a non-finite loss
        self._last: torch.Tensor | None = None  # the step's last loss value
        # on the loss's device: [run, run start, value at run start, diverged, diverged step, its loss]
        self._track: torch.Tensor | None = None
        loss.register_forward_hook(self._record)

    def _record(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        value = output.detach() if isinstance(output, torch.Tensor) else None
        if value is None:
            return
        bad = ~torch.isfinite(value).all()
        self._bad = bad if self._bad is None else self._bad | bad
        self._last = value.float().reshape(-1)[0]

    def _fold_step(self, step: int) -> None:
        """This step's loss into `_track`, on the device, without reading anything back."""
        if self._bad is None or self._last is None:
            return
        device = self._last.device
        t = self._track if self._track is not None else torch.zeros(6, device=device)
        bad = self._bad.to(device)
        step_t = torch.full((), float(step), device=device)
        starts = bad & (t[0] == 0)
        run = (t[0] + 1) * bad.float()
        start = torch.where(starts, step_t, t[1])
        start_value = torch.where(starts, self._last, t[2])
        trigger = (run >= self.patience) & (t[3] == 0)
        self._track = torch.stack(
            [
                run,
                start,
                start_value,
                torch.maximum(t[3], trigger.float()),
                torch.where(trigger, start, t[4]),
                torch.where(trigger, start_value, t[5]),
            ]
        )
        self._bad = None

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        self._fold_step(state.global_step)
        if self.diverged is not None:
            _stop_without_saving(control)
            return
        grouped = process_group_exists()
        check = (
            control.should_log
            or control.should_save
            or control.should_evaluate
            or control.should_training_stop
            or state.global_step >= state.max_steps
            or (not grouped and self.signal is not None and self.signal.requested)
        )
        if check:
            self._check(args, state, control, kw.get("model"), grouped)

    def _check(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model: Any, grouped: bool
    ) -> None:
        """One host read (and, in a group, one collective) of the loss record, weights and signal."""
        world, rank = (
            (torch.distributed.get_world_size(), torch.distributed.get_rank()) if grouped else (1, 0)
        )
        device = self._track.device if self._track is not None else args.device
        if grouped:
            device = collective_device(str(torch.distributed.get_backend()), args.device)
        # [signal, weights not finite, then per process: diverged, step, loss]; slots of other processes 0
        flags = torch.zeros(2 + 3 * world, device=device)
        if self.signal is not None and self.signal.requested:
            flags[0] = 1.0
        # the weights only where they are about to be saved or evaluated (a pass over every parameter:
        # tens of ms for a BERT on a CPU, too much for every logging step); weights are equal in every
        # process of a group, so one process that checks reports for all
        saving = control.should_save or control.should_evaluate or (self.signal and self.signal.requested)
        if model is not None and saving:
            flags[1] = (~_all_finite(model)).float().to(device)
        if self._track is not None:
            mine = self._track[3:6].to(device)
            flags[2 + 3 * rank : 5 + 3 * rank] = torch.where(mine[0] > 0, mine, torch.zeros_like(mine))
        if grouped:
            torch.distributed.all_reduce(flags)  # a sum: each slot has one writer
        values = flags.cpu().tolist()  # the one host sync of this check
        diverged = [(int(values[3 + 3 * r]), r, values[4 + 3 * r]) for r in range(world) if values[2 + 3 * r]]
        if diverged:
            step, where, loss = min(diverged)
            on = f" on process {where}" if world > 1 else ""
            lasting = f" for {self.patience} steps in a row" if self.patience > 1 else ""
            self.diverged = Divergence(step, f"the training loss is {loss}{on}{lasting}")
        elif values[1]:
            self.diverged = Divergence(state.global_step, "the model's weights are no longer finite")
        if self.diverged is not None:
            _stop_without_saving(control)
        elif values[0] and self.signal is not None:
            self.signal.requested = True  # every process of the group stops here, signalled or not
            self.signal.stop_here(args, state, control)

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        value = (kw.get("metrics") or {}).get(self.dev_metric) if self.dev_metric else None
        if self.diverged is None and value is not None and not math.isfinite(float(value)):
            self.diverged = Divergence(state.global_step, f"the {self.dev_name} is {float(value)}")
        if self.diverged is not None:
            _stop_without_saving(control)


class SelectTheBest(TrainerCallback):
    """Step 0 competes for the best (unless `start_competes` is off: the best *trained* step, as runs
    before it and SimCSE select); a new best is checkpointed (see the module docstring)."""

    def __init__(self, dev_metric: str, start_competes: bool = True) -> None:
        self.dev_metric = dev_metric
        self.start_competes = start_competes

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        value = (kw.get("metrics") or {}).get(self.dev_metric)
        if value is None or not math.isfinite(float(value)):
            return
        if state.global_step == 0:  # transformers' eval_on_start never reaches its best-metric update
            if self.start_competes:
                state.best_metric, state.best_global_step = float(value), 0
        elif state.best_metric is None or float(value) > state.best_metric:
            control.should_save = True  # transformers then records it as the best and can reload it


def _stop_without_saving(control: TrainerControl) -> None:
    control.should_save = False
    control.should_evaluate = False
    control.should_training_stop = True


def _all_finite(model: torch.nn.Module) -> torch.Tensor:
    """Whether every floating-point weight is finite, as a bool tensor on the weights' device (no sync)."""
    flags = [torch.isfinite(p).all() for p in model.parameters() if p.is_floating_point()]
    return torch.stack(flags).all() if flags else torch.tensor(True)


def divergence_message(divergence: Divergence, config: Any, out: Path, config_path: str | None) -> str:
    """One line: the step, what went non-finite, what to try, and which checkpoint resumes."""
    t = config.training
    tries = f"a lower training.learning_rate (now {t.learning_rate:g})"
    if t.precision == "bf16":
        tries += " or training.precision: fp32"
    latest = latest_complete_checkpoint(out)
    command = f"lwap train {config_path or 'CONFIG'}"
    where = (
        f"the last checkpoint, {out / CHECKPOINTS_DIR / latest.name}, has finite weights ({command} --resume "
        "continues from it)"
        if latest
        else "no checkpoint was saved before it"
    )
    return (
        f"training diverged at step {divergence.step}: {divergence.what}; stopped without saving a model. "
        f"Try {tries} and start over with --overwrite; {where}"
    )
