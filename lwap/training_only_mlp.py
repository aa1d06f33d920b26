"""TrainingOnlyMLP: SimCSE's MLP over [CLS], used in training and, unless told to stay, dropped at inference.

Unsupervised SimCSE drops it at test time (`--mlp_only_train`); supervised SimCSE keeps it
(`at_inference=True`, the `cls` pooler's `mlp_at_inference` option).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .module_io import SafetensorsModule  # relative: this file also runs from model folders


class TrainingOnlyMLP(SafetensorsModule):
    """Linear H→H + Tanh over the sentence embedding, in training mode (and at inference if `at_inference`).

    Not sentence-transformers' `Dense`: Dense always runs, while unsupervised SimCSE drops the MLP at
    test time; one module for both keeps the weights' names the same whichever recipe trained them.
    Models saved before `at_inference` existed load with its default, False (what they did).
    """

    config_keys = ["hidden_size", "at_inference"]

    def __init__(self, hidden_size: int, at_inference: bool = False) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.at_inference = at_inference
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self.training or self.at_inference:
            features["sentence_embedding"] = torch.tanh(self.dense(features["sentence_embedding"]))
        return features

    def get_embedding_dimension(self) -> int:
        return self.hidden_size
