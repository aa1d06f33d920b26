"""NormalizeHiddenStates: layer-normalise the hidden states a pre-LayerNorm backbone leaves raw.

A post-LayerNorm encoder (BERT, the LWAP paper's bert-base) ends every layer with a LayerNorm, so all its
hidden states have one scale. A pre-LayerNorm encoder (RoBERTa-PreLayerNorm, the form issue 36's backbone
trained in) returns its intermediate hidden states as the raw residual stream and normalises only the last
(transformers replaces the last hidden state by the final LayerNorm's output). On
bert-prenorm-4l256-sentences the mean token norms are 26 (embeddings), 165, 206, 215 (layers 1-3) and 14
(layer 4), so an average of layers, LWAP's attention over them and its tanh output would be ruled by the
raw ones. This module gives each listed hidden state a parameter-free LayerNorm over the hidden size
(unit variance per token, as a post-LayerNorm layer before its affine), so the poolers that read several
layers see them as they would in the paper's regime. sentence-transformers' `LayerNorm` module normalises
the sentence embedding only, with parameters; this acts on `all_layer_embeddings`, before any pooling.
"""

from __future__ import annotations

from typing import Any

from torch.nn import functional

from .module_io import SafetensorsModule  # relative: this file also runs from model folders


class NormalizeHiddenStates(SafetensorsModule):
    """`all_layer_embeddings[i]` for each i in `layers` → LayerNorm without affine over the last dim."""

    config_keys = ["layers", "eps"]

    def __init__(self, layers: list[int], eps: float = 1e-5) -> None:
        super().__init__()
        self.layers = [int(i) for i in layers]
        self.eps = float(eps)

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        hidden = list(features["all_layer_embeddings"])
        for i in self.layers:
            hidden[i] = functional.layer_norm(hidden[i], hidden[i].shape[-1:], eps=self.eps)
        features["all_layer_embeddings"] = tuple(hidden)
        return features
