"""Two training-time speed options for the backbone: eager attention, and dropout with a cheaper mask.

Measured on this CPU (docs/BENCHMARKS.md; `training.attention`, `training.fast_dropout`):

- `attention: eager`. In training (dropout on), PyTorch's CPU `scaled_dot_product_attention` runs its
  reference "math" path, which under bf16 autocast adds dtype copies of Q, K, V and the scores; plain
  matmul + softmax attention (transformers' eager) skips them. Inference is untouched: the saved model
  loads with transformers' default (sdpa), since the attention choice is not written to config.json.
- `fast_dropout: true`. torch's CPU dropout draws one Mersenne-Twister number per element with `bernoulli_`,
  single-threaded on AMD CPUs (the parallel MKL path is for Intel only): a visible share of a bf16 SimCSE step
  (docs/BENCHMARKS.md, "Where a step goes"). `FastDropout` takes two 15-bit uniforms from each 32-bit draw,
  compares them with a threshold, and keeps a bool mask for backward. Same dropout: each element is kept
  independently with probability 1 - p (p rounded to a multiple of 1/32768, e.g. 0.1 → 0.1000061) and scaled
  by 1/(1 - p), the rounded p, so the expectation is unchanged; only the random stream differs from
  `nn.Dropout`'s. With eager attention the attention-probability dropout uses it too (inside SDPA it cannot).
Both only change how the training forward is computed; weights and saved files are the same as without.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from transformers import AttentionInterface, PreTrainedModel
from transformers.masking_utils import AttentionMaskInterface, eager_mask

RESOLUTION = 1 << 15  # each 32-bit draw from torch's `random_` on int32 has 31 random bits: two 15-bit halves
ATTENTION = "lwap_eager_fast_dropout"  # name registered with transformers' attention interfaces


class _KeepAndScale(torch.autograd.Function):
    """x · keep · scale, saving only the bool mask (nn.Dropout saves a full float mask)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, keep: Tensor, scale: float) -> Tensor:
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return x.mul(keep).mul_(scale)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None]:
        (keep,) = ctx.saved_tensors
        return grad.mul(keep).mul_(ctx.scale), None, None


def fast_dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Inverted dropout with rate `p` (rounded to 1/32768) from half as many RNG draws as elements."""
    if not training or p == 0.0:
        return x
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    threshold = round(p * RESOLUTION)
    n = x.numel()
    words = torch.empty((n + 1) // 2, dtype=torch.int32, device=x.device).random_()  # 31 random bits each
    halves = words.view(torch.int16)[:n].view(x.shape) & (RESOLUTION - 1)  # uniform in [0, 32768)
    keep = halves >= threshold
    return _KeepAndScale.apply(x, keep, RESOLUTION / (RESOLUTION - threshold))


class FastDropout(nn.Module):
    """Drop-in for `nn.Dropout` in training (see `fast_dropout`); identity in eval mode."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return fast_dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def eager_attention_fast_dropout(
    module: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[Tensor, Tensor]:
    """transformers' eager attention (BERT's `eager_attention_forward`) with `fast_dropout` on the probs."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = fast_dropout(torch.softmax(scores, dim=-1), dropout, module.training)
    return torch.matmul(probs, value).transpose(1, 2).contiguous(), probs


def _register_attention() -> None:
    AttentionInterface.register(ATTENTION, eager_attention_fast_dropout)
    AttentionMaskInterface.register(ATTENTION, eager_mask)  # an additive float mask, as eager attention takes


def configure_for_training(model: nn.Module, attention: str, fast: bool) -> None:
    """Set the attention of every Hugging Face model inside `model`; with `fast`, swap in FastDropout."""
    for backbone in [m for m in model.modules() if isinstance(m, PreTrainedModel)]:
        if fast:
            for parent in backbone.modules():
                for name, child in list(parent.named_children()):
                    if type(child) is nn.Dropout:
                        setattr(parent, name, FastDropout(child.p))
        if attention == "eager" and fast:
            _register_attention()
            backbone.set_attn_implementation(ATTENTION)
        elif attention != "sdpa":
            backbone.set_attn_implementation(attention)
