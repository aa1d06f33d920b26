"""The FLOP model: what a step computes, counted from the shapes the backbone saw."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Shapes:
    """What a FLOP estimate needs from the backbone: non-embedding matmul weights, layers, hidden size."""

    linear_params: int
    layers: int
    hidden: int


def backbone_shapes(hf_model: Any) -> Shapes:
    import torch

    encoder = hf_model.encoder
    linear = sum(m.weight.numel() for m in encoder.modules() if isinstance(m, torch.nn.Linear))
    return Shapes(linear, hf_model.config.num_hidden_layers, hf_model.config.hidden_size)


def training_flops(forwards: list[tuple[int, int, int]], s: Shapes, *, padded: bool = True) -> float:
    """6·N·tokens for the encoder's linear layers + 12·L·H·T² per sequence for QKᵀ and AV (fwd + bwd = 3×).

    Forward: 2 FLOPs per weight per token, and 2·T²·H per layer each for QKᵀ and AV; backward costs twice the
    forward. Embeddings (lookups), LayerNorm, softmax, GELU, the pooling head and the loss are left out.
    `padded=False` counts only real tokens (T = each row's own length is approximated by the mean length).
    """
    total = 0.0
    for rows, length, real in forwards:
        if padded:
            tokens, per_row_t = rows * length, float(length)
        else:
            tokens, per_row_t = real, real / max(rows, 1)
        total += 6 * s.linear_params * tokens + 12 * s.layers * s.hidden * per_row_t**2 * rows
    return total


def record_forwards(module: Any, sink: list[tuple[int, int, int]]) -> Any:
    """Forward pre-hook: append (rows, padded length, real tokens) of each forward to `sink`.

    On a sentence-transformers `Transformer` module (its input is the features dict; it calls the Hugging
    Face model's `forward` directly, past any hook there) or on a Hugging Face model called with kwargs.
    """

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        features = args[0] if args and isinstance(args[0], dict) else kwargs
        if "input_ids" not in features:  # e.g. the model card's example encoding at train start
            return
        ids, mask = features["input_ids"], features.get("attention_mask")
        real = int(mask.sum()) if mask is not None else ids.numel()
        sink.append((int(ids.shape[0]), int(ids.shape[1]), real))

    return module.register_forward_pre_hook(hook, with_kwargs=True)
