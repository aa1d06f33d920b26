"""A run that diverges stops at once, and the saved model is always the step the summary names.

- `StopOnNonFinite`: the first step whose training loss is NaN or infinite, whose weights are about to be
  checkpointed or evaluated non-finite, or whose STS-B dev score is not finite stops the run there,
  without saving that step: every checkpoint on disk has finite weights, so `--resume` never continues
  from a broken one. `lwap train` then says what went non-finite and what to try, and exits 2 without
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
from lwap.train.callbacks import collective_device


class TrainingDivergedError(LwapError):
    """Training produced a non-finite loss, weights or dev score; the run stopped without a model."""


@dataclass(frozen=True)
class Divergence:
    step: int
    what: str  # e.g. "the training loss is nan"


class StopOnNonFinite(TrainerCallback):
    """Stop at the first non-finite training loss, weights or dev score (see the module docstring).

    The loss is read through a forward hook on the loss module, as a flag on its device; testing it
    costs one device sync a step (what transformers' NaN filter, switched off for this, cost too).
    Under several processes the flag is reduced, so every process stops at the same step.
    """

    def __init__(self, loss: torch.nn.Module, dev_metric: str | None) -> None:
        self.dev_metric = dev_metric
        self.diverged: Divergence | None = None
        self._bad: torch.Tensor | None = None  # a forward of this step gave a non-finite loss
        self._last: torch.Tensor | None = None  # the last loss, to say which value it was
        loss.register_forward_hook(self._record)

    def _record(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        value = output.detach() if isinstance(output, torch.Tensor) else None
        if value is None:
            return
        bad = ~torch.isfinite(value).all()
        self._bad = bad if self._bad is None else self._bad | bad
        self._last = value

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        if self.diverged is None:
            weights_checked = control.should_save or control.should_evaluate
            model = kw.get("model")
            flags = torch.zeros(2, device=args.device)
            if self._bad is not None:
                flags[0] = self._bad.to(args.device).float()
            if weights_checked and model is not None and not _all_finite(model):
                flags[1] = 1.0
            flags = _reduce_max(flags, args)
            if flags[0]:
                value = math.nan if self._last is None else float(self._last.float().reshape(-1)[0])
                self.diverged = Divergence(state.global_step, f"the training loss is {value}")
            elif flags[1]:
                self.diverged = Divergence(state.global_step, "the model's weights are no longer finite")
        self._bad = None
        if self.diverged is not None:
            _stop_without_saving(control)

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        value = (kw.get("metrics") or {}).get(self.dev_metric) if self.dev_metric else None
        if self.diverged is None and value is not None and not math.isfinite(float(value)):
            self.diverged = Divergence(state.global_step, f"the STS-B dev Spearman is {float(value)}")
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


def _all_finite(model: torch.nn.Module) -> bool:
    flags = [torch.isfinite(p).all() for p in model.parameters() if p.is_floating_point()]
    return bool(torch.stack(flags).all()) if flags else True


def _reduce_max(flags: torch.Tensor, args: TrainingArguments) -> torch.Tensor:
    if args.world_size > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
        flags = flags.to(collective_device(str(torch.distributed.get_backend()), args.device))
        torch.distributed.all_reduce(flags, op=torch.distributed.ReduceOp.MAX)
    return flags.cpu()


def divergence_message(divergence: Divergence, config: Any, out: Path, config_path: str | None) -> str:
    """One line: the step, what went non-finite, what to try, and which checkpoint resumes."""
    from lwap.train.outputs import CHECKPOINTS_DIR, latest_complete_checkpoint

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
