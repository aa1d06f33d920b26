"""The two small modules the comparison poolers need that sentence-transformers lacks.

Everything else (`Pooling` for cls/mean, `WeightedLayerPooling` for the seed's weighted pooling) is
reused from sentence-transformers; see `lwap.model.build_model`.
"""

from __future__ import annotations

from typing import Any

import torch
from sentence_transformers.sentence_transformer.modules import Module
from torch import nn

from lwap.module_io import load_module, save_module


class LayerMean(Module):
    """Token embeddings = plain mean of a fixed set of hidden states (SimCSE's first_last_avg, last2_avg).

    Not `WeightedLayerPooling`: its weights are trainable parameters over a contiguous range of layers,
    while these poolers average fixed, possibly non-adjacent layers (1 and L) with no parameters.
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

    def save(self, output_path: str, *args: Any, **kwargs: Any) -> None:
        save_module(self, output_path)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", **kwargs: Any) -> LayerMean:
        return load_module(cls, model_name_or_path, subfolder, **kwargs)


class TrainingOnlyMLP(Module):
    """SimCSE's MLP over [CLS] (Linear H→H + Tanh), applied in training mode only.

    Not `Dense`: Dense runs at inference too, while unsupervised SimCSE drops the MLP at test time
    (`--mlp_only_train`), which is what the `cls` pooler reproduces.
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

    def save(self, output_path: str, *args: Any, **kwargs: Any) -> None:
        save_module(self, output_path)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", **kwargs: Any) -> TrainingOnlyMLP:
        return load_module(cls, model_name_or_path, subfolder, **kwargs)
