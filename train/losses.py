"""SimCSE's objective as sentence-transformers' MultipleNegativesRankingLoss plus the two things it lacks.

MNRL already is SimCSE's InfoNCE: cosine similarity × scale (= 1/τ), in-batch negatives, optional hard
negatives as extra candidate columns, and `gather_across_devices` to share negatives between processes.
What it lacks:

1. Unsupervised SimCSE feeds each sentence twice (dropout is the only noise). The dataset has one
   column; `forward` passes it as both anchor and positive, so MNRL's merged forward encodes a batch of 2B
   rows, as SimCSE does.
2. SimCSE's hard-negative weight α: log α is added to the logit of each anchor's *own* hard negative
   (SimCSE's code calls log α `hard_negative_weight`; α = 1 is plain InfoNCE). MNRL's `hardness_mode`
   adds `strength × cos` (a similarity-dependent term), not a constant, and it has no other hook for a
   per-logit bias; MNRL computes all logits in one call `similarity_fct(local_anchors, all_candidates)`,
   so the bias is added there (divided by the scale, since MNRL multiplies by it afterwards).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from sentence_transformers.util import cos_sim, get_rank
from torch import Tensor


class SimCSELoss(MultipleNegativesRankingLoss):
    """InfoNCE over in-batch (and gathered) negatives with SimCSE's hard-negative weight α.

    Inputs: one column (unsupervised: each sentence is its own positive), (anchor, positive) pairs, or
    (anchor, positive, hard negative) triplets.
    """

    def __init__(
        self,
        model: Any,
        temperature: float = 0.05,
        hard_negative_weight: float = 1.0,
        gather_across_devices: bool = False,
    ) -> None:
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if not hard_negative_weight > 0:
            raise ValueError(f"hard_negative_weight (α) must be > 0, got {hard_negative_weight}")
        super().__init__(
            model,
            scale=1.0 / temperature,
            similarity_fct=cos_sim,
            gather_across_devices=gather_across_devices,
            directions=("query_to_doc",),
            partition_mode="joint",
        )
        self.hard_negative_weight = hard_negative_weight
        self._num_columns = 0
        if hard_negative_weight != 1.0:
            self.similarity_fct = self._cos_sim_with_hard_negative_bias

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        features = list(sentence_features)
        if len(features) == 1:  # unsupervised: the same sentences twice; dropout makes the two views differ
            features = [features[0], dict(features[0])]
        return super().forward(features, labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        self._num_columns = len(embeddings)
        return super().compute_loss_from_embeddings(embeddings, labels)

    def _cos_sim_with_hard_negative_bias(self, anchors: Tensor, candidates: Tensor) -> Tensor:
        """cos(anchors, candidates) + log(α)/scale at each anchor's own hard negative(s).

        Candidates are MNRL's `[positives; negatives_1; ...]` of the whole (gathered) batch, so the own
        hard negative of local row r sits at column k·world_batch + offset + r, k ≥ 1.
        """
        scores = cos_sim(anchors, candidates)
        negative_columns = self._num_columns - 2
        if negative_columns <= 0:
            return scores
        local_batch = anchors.size(0)
        world_batch = candidates.size(0) // (negative_columns + 1)
        if world_batch * (negative_columns + 1) != candidates.size(0):
            raise RuntimeError("unexpected candidate layout in MultipleNegativesRankingLoss")
        offset = get_rank() * local_batch if self.gather_across_devices else 0
        rows = torch.arange(local_batch, device=scores.device)
        bias = torch.zeros_like(scores)
        for k in range(1, negative_columns + 1):
            bias[rows, k * world_batch + offset + rows] = math.log(self.hard_negative_weight) / self.scale
        return scores + bias

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "hard_negative_weight": self.hard_negative_weight,
            "gather_across_devices": self.gather_across_devices,
        }

    @property
    def citation(self) -> str:
        return """
@inproceedings{gao2021simcse,
    title={{SimCSE}: Simple Contrastive Learning of Sentence Embeddings},
    author={Gao, Tianyu and Yao, Xingcheng and Chen, Danqi},
    booktitle={Empirical Methods in Natural Language Processing (EMNLP)},
    year={2021}
}
"""
