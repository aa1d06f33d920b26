"""The loss of objective scored_pairs: sentence-transformers' own, chosen by `objective.scored_loss`.

Nothing of lwap's: `CoSENTLoss` and `AnglELoss` (a ranking of the batch's pairs by score: log(1 + Σ
exp(scale · (s_j − s_i))) over every pair of pairs whose scores order i above j, s the cosine, or AnglE's
angle difference) and `CosineSimilarityLoss` (MSE between the cosine and the score), as
sentence-transformers' training_stsbenchmark example trains them. Their scale is 20 by default, which is
1/τ for SimCSE's τ = 0.05, so `objective.temperature` sets it (the cosine loss has none).
"""

from __future__ import annotations

from typing import Any

from sentence_transformers.sentence_transformer.losses import AnglELoss, CoSENTLoss, CosineSimilarityLoss
from torch import nn

SCORED_LOSS_CLASSES: dict[str, type[nn.Module]] = {
    "cosent": CoSENTLoss,
    "angle": AnglELoss,
    "cosine": CosineSimilarityLoss,
}


def scored_loss(model: Any, name: str, temperature: float) -> nn.Module:
    """The loss `objective.scored_loss` names, on `model` (scores in [0, 1]: lwap.train.scored_data)."""
    if name == "cosine":
        return CosineSimilarityLoss(model)
    return SCORED_LOSS_CLASSES[name](model, scale=1.0 / temperature)
