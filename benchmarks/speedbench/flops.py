"""The FLOP model: what a step computes (counted from the shapes the backbone saw), and throughput / MFU."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from speedbench.settings import BATCH

if TYPE_CHECKING:
    from speedbench.variants import Variant


@dataclass
class Step:
    seconds: float
    forwards: list[tuple[int, int, int]]  # per backbone forward: (rows, padded length, real tokens)


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


def summarize(variant: Variant, bound: dict[str, Any]) -> dict[str, Any]:
    """Throughput = median over rounds of (timed sentences / timed seconds); step time = median step.

    Per round, not per step, because length-grouped batches make steps unequal: a median step would
    describe a typical batch, not the throughput. Each round's data order has its own seed (the same for
    every variant), so the rounds also sample different batches.
    """
    assert variant.shapes is not None
    times = [s.seconds for s in variant.steps]
    per_round = len(variant.steps) // len(variant.rounds)
    chunks = [variant.steps[i : i + per_round] for i in range(0, len(variant.steps), per_round)]

    def rate(steps: list[Step], padded: bool = True) -> float:  # FLOP/s of one round
        assert variant.shapes is not None
        flops = sum(training_flops(s.forwards, variant.shapes, padded=padded) for s in steps)
        return flops / sum(s.seconds for s in steps)

    throughput = statistics.median(BATCH * len(c) / sum(s.seconds for s in c) for c in chunks)
    achieved = statistics.median(rate(c) for c in chunks) / 1e9
    useful = statistics.median(rate(c, padded=False) for c in chunks) / 1e9
    median = statistics.median(times)
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [median, median, median]
    padded_tokens = sum(r * t for s in variant.steps for r, t, _ in s.forwards)
    real_tokens = sum(x for s in variant.steps for _, _, x in s.forwards)
    return {
        "key": variant.key,
        "label": variant.label,
        "precision": variant.precision,
        "timed_steps": len(times),
        "sentences_per_s": throughput,
        "median_step_s": median,
        "step_s_q1_q3": [quartiles[0], quartiles[2]],
        "round_seconds": variant.rounds,
        "gflop_per_step": statistics.mean(training_flops(s.forwards, variant.shapes) for s in variant.steps)
        / 1e9,
        "padded_tokens_per_step": padded_tokens / len(times),
        "real_token_fraction": real_tokens / max(padded_tokens, 1),
        "achieved_gflops": achieved,
        "mfu_vs_bf16_bound": achieved / bound["bf16"]["bound_gflops"],
        "mfu_vs_fp32_bound": achieved / bound["fp32"]["bound_gflops"],
        "useful_mfu_vs_bf16_bound": useful / bound["bf16"]["bound_gflops"],
    }
