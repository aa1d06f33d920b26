"""SimCSE's loss over a batch encoded in mini-batches (GradCache): big batches on one device.

`training.mini_batch_size: N` wraps `SimCSELoss` in `CachedSimCSELoss`, the technique of
sentence-transformers' `CachedMultipleNegativesRankingLoss`, through its own `CachedLossMixin`:
(1) embed every mini-batch of N without gradients, keeping each one's RNG state (`RandContext`);
(2) compute the loss over the whole batch from those embeddings and back-propagate it to them only;
(3) in the backward pass, re-embed each mini-batch with its saved RNG state, so dropout draws the same
masks as in (1), and push the cached embedding gradients through the encoder.
Loss and gradients equal the full batch's (tests/test_train_mini_batch.py); memory is one mini-batch's
activations plus the batch's embeddings. Costs one extra forward pass per step.

Why not `CachedMultipleNegativesRankingLoss` itself: it needs at least two input columns (unsupervised
SimCSE has one, encoded twice) and recomputes the logits in its own chunked loop, which has no place
for SimCSE's hard-negative weight α (`SimCSELoss` adds it inside the similarity). The mixin supplies
the mini-batching, the RNG replay and the backward hook; `SimCSELoss` supplies the loss, unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import torch
from sentence_transformers.base.losses.gradcache import CachedLossMixin
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from lwap.train.losses import SimCSELoss


def _rows(feature: dict[str, Any]) -> int:
    """The batch size of one column's features (their first tensor's first dimension)."""
    return next(len(value) for value in feature.values() if isinstance(value, Tensor))


class CachedSimCSELoss(CachedLossMixin, nn.Module):
    """`loss` (a SimCSELoss) computed with the model run on `mini_batch_size` rows at a time."""

    def __init__(self, loss: SimCSELoss, mini_batch_size: int) -> None:
        if mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be at least 1, got {mini_batch_size}")
        super().__init__()
        self.model = loss.model
        self.loss = loss
        self.mini_batch_size = mini_batch_size
        self._autocast: tuple[str, torch.dtype] | None = None
        self._replays_left = 0  # gradient replays of the current batch not yet run (the backward hook)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        features = list(sentence_features)
        if len(features) == 1:  # unsupervised: two views of one column, as SimCSELoss.forward
            features = [features[0], dict(features[0])]
        device_type = self.model.device.type
        # The backward hook re-embeds outside the trainer's autocast: remember it, to re-enter it there.
        enabled = torch.is_autocast_enabled(device_type)
        self._autocast = (device_type, torch.get_autocast_dtype(device_type)) if enabled else None
        self._replays_left = sum(-(-_rows(feature) // self.mini_batch_size) for feature in features)
        return self.forward_cached(features, labels)

    def embed_minibatch(self, *args: Any, **kwargs: Any) -> tuple[Tensor, Any]:
        """The mixin's, under the autocast that was active in `forward` (also in the backward replay);
        under DDP, every gradient replay but the batch's last runs in `no_sync` (see `_ddp_sync`)."""
        context = (
            torch.autocast(self._autocast[0], dtype=self._autocast[1])
            if self._autocast is not None
            else contextlib.nullcontext()
        )
        with context, self._ddp_sync(bool(kwargs.get("with_grad", args[3] if len(args) > 3 else False))):
            return super().embed_minibatch(*args, **kwargs)

    def _ddp_sync(self, with_grad: bool) -> contextlib.AbstractContextManager[Any]:
        """DDP all-reduces the gradients after each backward whose forward ran outside `no_sync`: one
        all-reduce of the whole gradient per mini-batch, unless all replays but the last run inside it
        (the gradients then accumulate locally and are reduced once). sentence-transformers ≥ 6.2's
        backward hook does the same; 6.0/6.1's does not, so lwap does it here (nesting is harmless)."""
        if not with_grad or not torch.is_grad_enabled():
            return contextlib.nullcontext()
        self._replays_left -= 1
        if isinstance(self.model, DistributedDataParallel) and self._replays_left > 0:
            return self.model.no_sync()
        return contextlib.nullcontext()

    def calculate_loss(
        self, reps: list[list[Tensor]], labels: Tensor | None = None, *, with_backward: bool = False
    ) -> Tensor:
        """SimCSE's loss over the whole batch's embeddings (one column per input, mini-batches joined)."""
        loss = self.loss.compute_loss_from_embeddings([torch.cat(column) for column in reps], labels)
        if with_backward:
            loss.backward()
            loss = loss.detach()
        return loss

    def get_config_dict(self) -> dict[str, Any]:
        return {**self.loss.get_config_dict(), "mini_batch_size": self.mini_batch_size}

    @property
    def citation(self) -> str:
        return self.loss.citation
