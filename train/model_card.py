"""The saved model's card (README.md): what a user publishes with sentence-transformers' `push_to_hub`.

sentence-transformers fills its `SentenceTransformerModelCardData` during training, but for an lwap run
it gets three things wrong: the title is the bare class name (the backbone is a local folder, so it finds
no hub id), nothing says which pooling and objective were trained, and the evaluation section holds the
*last* evaluation, not the kept (best) checkpoint's. `describe_run` sets them from the config and the
trainer's log history before the model is saved.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwap.train.config import TrainConfig

POOLING_NAMES = {
    "lwap": "layer-wise attention pooling (LWAP)",
    "weighted": "weighted layer pooling",
    "cls": "[CLS] pooling (SimCSE's MLP in training only)",
    "mean": "mean pooling",
    "first_last_avg": "first-last layer average pooling",
    "last2_avg": "last-two-layers average pooling",
}
OBJECTIVE_NAMES = {"unsup_simcse": "unsupervised SimCSE", "sup_simcse": "supervised SimCSE"}


def kept_step(trainer: Any, config: TrainConfig) -> int:
    """The step whose weights are saved: the best checkpoint with `eval.keep_best`, else the last step."""
    state = trainer.state
    if config.eval.keep_best and state.best_global_step is not None:  # 0: the rebuilt step-0 weights
        return int(state.best_global_step)
    return int(state.global_step)


def metrics_at_step(log_history: list[dict[str, Any]], evaluator_name: str, step: int) -> dict[str, float]:
    """The evaluator's metrics logged at `step`, keyed as the evaluator returns them (without `eval_`)."""
    prefix = f"eval_{evaluator_name}_"
    metrics: dict[str, float] = {}
    for entry in log_history:
        if int(entry.get("step", -1)) == step:
            metrics.update({k[len("eval_") :]: float(v) for k, v in entry.items() if k.startswith(prefix)})
    return metrics


def _hub_id(backbone: str) -> str | None:
    """The backbone's hub id, or None for a local folder (a path is no `base_model` on the hub)."""
    looks_like_path = backbone.startswith((".", "/", "~")) or backbone.count("/") > 1
    return None if looks_like_path or Path(backbone).expanduser().exists() else backbone


def describe_run(trainer: Any, config: TrainConfig) -> None:
    """Name the base model, pooling and objective in the card, and report the kept checkpoint's STS-B dev."""
    model = trainer.model
    card = model.model_card_data
    pooling = POOLING_NAMES.get(config.model.pooling, f"{config.model.pooling} pooling")
    objective = OBJECTIVE_NAMES.get(config.objective.name, config.objective.name)
    card.model_name = f"{config.model.backbone} + {pooling}, {objective}"
    card.base_model = _hub_id(config.model.backbone)
    card.base_model_revision = None
    card.add_tags(["lwap", f"{config.model.pooling}-pooling", config.objective.name.replace("_", "-")])
    evaluator = getattr(trainer, "evaluator", None)
    if evaluator is None or not config.eval.stsb_dev:
        return
    step = kept_step(trainer, config)
    metrics = metrics_at_step(trainer.state.log_history, evaluator.name, step)
    if metrics:  # replace the last evaluation's figures with those of the weights being saved
        card.eval_results_dict[evaluator] = metrics
    if config.eval.keep_best:
        card.set_best_model_step(step)  # the row shown in bold in the card's training log
