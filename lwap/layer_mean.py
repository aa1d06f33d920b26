"""LayerMean: token embeddings averaged over fixed hidden states (SimCSE's first_last_avg, last2_avg)."""

from __future__ import annotations

from typing import Any

import torch

from .module_io import SafetensorsModule  # relative: this file also runs from model folders


class LayerMean(SafetensorsModule):
    """Token embeddings = plain mean of a fixed set of hidden states.

    Not sentence-transformers' `WeightedLayerPooling`: its weights are trainable parameters over a
    contiguous range of layers, while these poolers average fixed, possibly non-adjacent layers (1 and L)
    with no parameters.
    """

    config_keys = ["layers"]

    def __init__(self, layers: list[int]) -> None:
        super().__init__()
        if not layers:
            raise ValueError("LayerMean needs at least one layer index")
        self.layers = [int(i) for i in layers]

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        hidden = features["all_layer_embeddings"]
        features["token_embeddings"] = torch.stack([hidden[i] for i in self.layers]).mean(dim=0)
        return features
