"""TrainingOnlyMLP: SimCSE's MLP over [CLS], used in training and dropped at inference (the `cls` pooler)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .module_io import SafetensorsModule  # relative: this file also runs from model folders


class TrainingOnlyMLP(SafetensorsModule):
    """Linear H→H + Tanh over the sentence embedding, applied in training mode only.

    Not sentence-transformers' `Dense`: Dense runs at inference too, while unsupervised SimCSE drops the
    MLP at test time (`--mlp_only_train`), which is what the `cls` pooler reproduces.
    """

    config_keys = ["hidden_size"]

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self.training:
            features["sentence_embedding"] = torch.tanh(self.dense(features["sentence_embedding"]))
        return features

    def get_embedding_dimension(self) -> int:
        return self.hidden_size
