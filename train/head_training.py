"""How the pooling head trains apart from the backbone: its own learning rate, and a warm-up alone.

A new head (LWAP's attention, `cls`'s MLP, `weighted`'s layer weights) starts random on a backbone that
is already trained; at the backbone's small learning rate it barely moves in a short run. Two levers:

- `training.head_learning_rate_multiplier`: the head's parameters get learning_rate × m, through
  sentence-transformers' own `learning_rate_mapping` (parameter-name regex → learning rate; the
  scheduler scales every group alike);
- `training.head_warmup_steps`: the backbone is frozen (requires_grad off, so backward stops at the
  head) for the first N optimizer steps, then trains with the head.

"Head" = every module after the Transformer (module 0) that has parameters.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments


def head_module_indices(model: Any) -> list[int]:
    """Indices of the modules after the backbone that have trainable parameters."""
    return [i for i, module in enumerate(model) if i > 0 and any(True for _ in module.parameters())]


def head_learning_rate_mapping(model: Any, learning_rate: float, multiplier: float) -> dict[str, float]:
    """sentence-transformers' `learning_rate_mapping` for the head (names as the loss sees them,
    `model.<index>.<param>`); empty when the multiplier is 1 or the pooler has no parameters."""
    indices = head_module_indices(model)
    if multiplier == 1.0 or not indices:
        return {}
    return {rf"^model\.({'|'.join(map(str, indices))})\.": learning_rate * multiplier}


def head_learning_rate(args: Any) -> float | None:
    """The head's learning rate as the optimizer gets it (from `args.learning_rate_mapping`), or None
    when the head trains at the base rate."""
    return next(iter(args.learning_rate_mapping.values()), None) if args.learning_rate_mapping else None


def head_training_setup(model: Any, args: Any, training: Any) -> list[Any]:
    """Apply the config's head learning rate to `args`; return the warm-up callback (if any)."""
    from lwap.errors import ConfigError

    has_head = bool(head_module_indices(model))
    if not has_head and (training.head_learning_rate_multiplier != 1.0 or training.head_warmup_steps):
        raise ConfigError(
            "training.head_learning_rate_multiplier / training.head_warmup_steps need a pooler with "
            "parameters (lwap, weighted, cls); this model's pooling has none"
        )
    args.learning_rate_mapping = head_learning_rate_mapping(
        model, training.learning_rate, training.head_learning_rate_multiplier
    )
    if not training.head_warmup_steps:
        return []
    args.ddp_find_unused_parameters = True  # frozen backbone parameters get no gradient under torchrun
    return [FreezeBackboneForWarmup(model, training.head_warmup_steps, announce=args.process_index == 0)]


class FreezeBackboneForWarmup(TrainerCallback):
    """Backbone frozen while state.global_step < steps (also after a resume), trained afterwards.

    The optimizer is created before the first step with every parameter, so unfreezing needs nothing
    else: AdamW skips parameters whose gradient is None while frozen.
    """

    def __init__(self, model: Any, steps: int, announce: bool = True) -> None:
        self.backbone, self.steps, self.announce = model[0], steps, announce
        # what trains after the warm-up: not what was frozen from the start (BERT's unused pooler)
        self.trainable = [p for p in self.backbone.parameters() if p.requires_grad]
        self.frozen: bool | None = None

    def on_step_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        frozen = state.global_step < self.steps
        if frozen == self.frozen:
            return
        for parameter in self.trainable:
            parameter.requires_grad_(not frozen)
        if self.announce and (frozen or self.frozen is not None):
            what = "frozen (head warm-up)" if frozen else "trained from here on"
            print(f"lwap train: step {state.global_step}: backbone {what}", flush=True)
        self.frozen = frozen

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        for parameter in self.trainable:  # a run shorter than the warm-up: leave it trainable
            parameter.requires_grad_(True)
