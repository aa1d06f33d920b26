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

from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from lwap.errors import ConfigError
from lwap.registry import POOLERS

if TYPE_CHECKING:
    from lwap.train.config import TrainingConfig


def head_module_indices(model: Any) -> list[int]:
    """Indices of the modules after the backbone that have trainable parameters."""
    return [i for i, module in enumerate(model) if i > 0 and any(True for _ in module.parameters())]


def head_learning_rate(training: TrainingConfig) -> float | None:
    """The head's learning rate (learning_rate × the multiplier), or None when it trains at the base rate."""
    multiplier = training.head_learning_rate_multiplier
    return None if multiplier == 1.0 else training.learning_rate * multiplier


def head_learning_rate_mapping(model: Any, training: TrainingConfig) -> dict[str, float]:
    """sentence-transformers' `learning_rate_mapping` for the head (names as the loss sees them,
    `model.<index>.<param>`); empty when the head trains at the base rate. ConfigError when the config
    asks for a head rate or warm-up and the pooler has no parameters."""
    indices = head_module_indices(model)
    rate = head_learning_rate(training)
    if not indices and (rate is not None or training.head_warmup_steps):
        learning = ", ".join(name for name, pooler in POOLERS.items() if pooler.parameters)
        raise ConfigError(
            "training.head_learning_rate_multiplier / training.head_warmup_steps need a pooler with "
            f"parameters ({learning}); this model's pooling has none"
        )
    return {} if rate is None else {rf"^model\.({'|'.join(map(str, indices))})\.": rate}


def head_warmup(model: Any, training: TrainingConfig, announce: bool) -> list[Any]:
    """The callback that freezes the backbone for `training.head_warmup_steps` (none without a warm-up;
    the training arguments turn DDP's search for unused parameters on for it)."""
    if not training.head_warmup_steps:
        return []
    return [FreezeBackboneForWarmup(model, training.head_warmup_steps, announce=announce)]


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
