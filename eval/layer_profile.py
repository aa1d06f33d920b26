"""Which layers does an LWAP model listen to? Mean layer attention over a set of sentences, and its plot.

`LayerwiseAttentionPooling.last_attention` holds (batch, query, key layer) weights of the last forward
only (a query per layer, or the k learned queries of `lwap_queries: latent`); a forward hook accumulates
them over every batch while sentences are encoded. Each sentence counts once: its attention is averaged
over the queries, then over sentences.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformer

from lwap.checks.files import save_figure_atomically
from lwap.layerwise_attention import LayerwiseAttentionPooling
from lwap.model import find_lwap


class LayerAttentionRecorder:
    """Sums the attention weights of an LWAP module over forward passes while `attached()`."""

    def __init__(self, module: LayerwiseAttentionPooling) -> None:
        self.module = module
        # hidden-state index of each attended position (0 = embedding output)
        self.layers = (
            list(module.layers) if module.layers is not None else list(range(module.num_hidden_states))
        )
        self.sentences = 0
        self.by_key: torch.Tensor | None = None  # (key layer,)
        self.matrix: torch.Tensor | None = None  # (query, key layer)

    @classmethod
    def for_model(cls, model: SentenceTransformer) -> LayerAttentionRecorder | None:
        """A recorder for `model`'s LWAP module, or None if the model has none."""
        module = find_lwap(model)
        return cls(module) if module is not None else None

    def add(self, attention: torch.Tensor) -> None:
        attention = attention.detach().float().cpu()
        by_key, matrix = attention.mean(dim=1).sum(dim=0), attention.sum(dim=0)
        self.by_key = by_key if self.by_key is None else self.by_key + by_key
        self.matrix = matrix if self.matrix is None else self.matrix + matrix
        self.sentences += attention.shape[0]

    @contextmanager
    def attached(self) -> Iterator[LayerAttentionRecorder]:
        """Record every forward pass of the module inside the block."""
        handle = self.module.register_forward_hook(
            lambda mod, _inputs, _outputs: self.add(mod.last_attention)
        )
        try:
            yield self
        finally:
            handle.remove()

    def profile(self) -> dict[str, Any]:
        """Mean attention each layer receives (and the query × key matrix), averaged over sentences."""
        if not self.sentences or self.by_key is None or self.matrix is None:
            return {"layers": self.layers, "sentences": 0, "mean_attention": [], "query_by_key": []}
        return {
            "layers": self.layers,
            "sentences": self.sentences,
            "mean_attention": (self.by_key / self.sentences).tolist(),
            "query_by_key": (self.matrix / self.sentences).tolist(),
        }


def plot_layer_attention(profile: dict[str, Any], path: Path, title: str) -> Path:
    """PNG: bar chart of the mean attention each layer receives, and the query × key layer matrix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layers = profile["layers"]
    labels = ["emb" if i == 0 else str(i) for i in layers]
    figure, (bars, heat) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.3, 1]})
    bars.bar(range(len(layers)), profile["mean_attention"], color="#4C72B0")
    bars.axhline(1.0 / len(layers), color="gray", linestyle="--", linewidth=1, label="uniform")
    bars.set_xticks(range(len(layers)), labels)
    bars.set_xlabel("layer attended (key; emb = embedding output)")
    bars.set_ylabel("mean attention weight")
    bars.set_title(f"mean over {profile['sentences']:,} sentences and all queries", fontsize=9)
    bars.legend(fontsize=8)
    image = heat.imshow(profile["query_by_key"], cmap="viridis", aspect="auto")
    heat.set_xticks(range(len(layers)), labels)
    queries = len(profile["query_by_key"])
    by_layer = queries == len(layers)  # a query per layer; else the learned queries of `latent`
    heat.set_yticks(range(queries), labels if by_layer else [f"q{i + 1}" for i in range(queries)])
    heat.set_xlabel("key layer")
    heat.set_ylabel("query layer" if by_layer else "learned query")
    heat.set_title("attention, query × key layer", fontsize=9)
    figure.colorbar(image, ax=heat, fraction=0.046)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        save_figure_atomically(figure, path, dpi=120)
    finally:
        plt.close(figure)
    return path
