"""Elastic embeddings: SimCSE's loss on shorter vectors (Matryoshka) and at shallower depths, each step.

Matryoshka alone (`objective.matryoshka_dims`) is sentence-transformers' `MatryoshkaLoss` around lwap's
`SimCSELoss`, or around `CachedSimCSELoss` with `training.mini_batch_size` (it decorates the cached loss's
`calculate_loss`, so GradCache's replay and its dimensions compose); nothing of lwap's own.

Depths (`objective.depths`) are lwap's own, because sentence-transformers' `AdaptiveLayerLoss` does not fit
lwap's poolers (docs/TRAINING.md, "Elastic embeddings"; benchmarks/elastic/adaptive_layer_probe.py shows
it): it hands the pooler layer k's token embeddings but every layer in `all_layer_embeddings`, so a pooler
reading several layers sees the dropped ones; it rebuilds later terms from cached states held in the
feature dicts, so the second view of a one-column batch (unsupervised SimCSE as lwap feeds it) is the
first view's states again; and it refuses gradient-cache losses. Here, within the loss's forward, the
model's forward is `lwap.depth.DepthReader.embed`: one backbone pass per call, i.e. per dropout view (or
per GradCache mini-batch, replayed with its RNG state), then each depth's pooler view on levels 0..k of
that pass, stacked as `sentence_embedding` (batch, depths, dim). sentence-transformers' own column
embedding (`embed_columns`) and GradCache machinery carry that tensor unchanged; the loss is then
Σ_k w_k · SimCSE(views at depth k) (× Σ_d w_d over Matryoshka dimensions, truncated and renormalised
with sentence-transformers' `shrink`). Going through the model's own call keeps DDP's gradient hooks.

The deepest listed depth is the backbone's L (checked), trained every step; `depth_sample: n` draws n of
the shallower ones per step (Python's `random`, which the trainer seeds and checkpoints), each weight
scaled by (shallower depths)/n so that the expected loss is the all-depths loss.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss
from sentence_transformers.sentence_transformer.losses.matryoshka import shrink
from torch import Tensor, nn

from lwap.depth import DepthReader, num_layers
from lwap.errors import ConfigError
from lwap.train.cached_loss import CachedSimCSELoss
from lwap.train.elastic_config import check_against_backbone
from lwap.train.losses import SimCSELoss


def unwrapped(model: Any) -> SentenceTransformer:
    """The SentenceTransformer inside DDP (`.module`) or torch.compile (`._orig_mod`) wrappers."""
    while not isinstance(model, SentenceTransformer):
        inner = getattr(model, "_orig_mod", None) or getattr(model, "module", None)
        if inner is None:
            raise TypeError(f"cannot find the SentenceTransformer inside {type(model).__name__}")
        model = inner
    return model


@dataclass
class ElasticPlan:
    """Which depths and dimensions each step trains, with what weights."""

    reader: DepthReader
    depths: list[int]  # ascending; the last is the backbone's L
    depth_weights: dict[int, float]
    sample: int | None
    dims: list[tuple[int | None, float]]  # (dimension or None = all, weight)

    def draw(self) -> list[int]:
        """This step's depths: all, or the deepest and `sample` others (ascending)."""
        if self.sample is None:
            return list(self.depths)
        return [*sorted(random.sample(self.depths[:-1], self.sample)), self.depths[-1]]

    def weight(self, depth: int) -> float:
        scale = (
            1.0 if self.sample is None or depth == self.depths[-1] else (len(self.depths) - 1) / self.sample
        )
        return self.depth_weights[depth] * scale

    @contextlib.contextmanager
    def reading(self, model: Any, depths: Sequence[int]) -> Iterator[None]:
        """Within: calling `model` (or its DDP wrapper) returns the stacked embeddings at `depths`."""
        inner = unwrapped(model)
        before = inner.__dict__.get("forward")
        inner.forward = lambda features, **kwargs: self.reader.embed(features, depths)
        try:
            yield
        finally:
            if before is None:
                del inner.forward
            else:
                inner.forward = before

    def combine(
        self, loss: SimCSELoss, columns: list[Tensor], labels: Tensor, depths: Sequence[int]
    ) -> Tensor:
        """Σ over depths and dimensions of the weighted SimCSE loss; `columns`: (batch, depths, dim) each."""
        total: Tensor | float = 0.0
        for index, depth in enumerate(depths):
            for dim, dim_weight in self.dims:
                views = [column[:, index] for column in columns]
                if dim is not None:
                    views = [shrink(view, dim) for view in views]
                term = loss.compute_loss_from_embeddings(views, labels)
                total = total + self.weight(depth) * dim_weight * term
        assert isinstance(total, Tensor)
        return total


def _two_views(features: Iterable[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
    """Unsupervised SimCSE's one column as two dicts (two forwards, two dropout draws), as SimCSELoss."""
    listed = list(features)
    return [listed[0], dict(listed[0])] if len(listed) == 1 else listed


class DepthElasticLoss(nn.Module):
    """SimCSE's loss at several depths (and dimensions) of one forward per view."""

    def __init__(self, loss: SimCSELoss, plan: ElasticPlan) -> None:
        super().__init__()
        self.model = loss.model
        self.loss = loss
        self.plan = plan

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        depths = self.plan.draw()
        with self.plan.reading(self.model, depths):
            columns = embed_columns(self.model, _two_views(sentence_features))
        return self.plan.combine(self.loss, columns, labels, depths)

    def get_config_dict(self) -> dict[str, Any]:
        return {**self.loss.get_config_dict(), **_plan_config(self.plan)}

    @property
    def citation(self) -> str:
        return self.loss.citation


class CachedDepthElasticLoss(CachedSimCSELoss):
    """`DepthElasticLoss` over mini-batches (GradCache): each mini-batch's one backbone pass, embedded and
    replayed (same RNG state, same depths) at every depth of the step."""

    def __init__(self, loss: SimCSELoss, mini_batch_size: int, plan: ElasticPlan) -> None:
        super().__init__(loss, mini_batch_size)
        self.plan = plan
        self._depths: list[int] = list(plan.depths)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        self._depths = self.plan.draw()  # kept for this batch's backward replay
        return super().forward(sentence_features, labels)

    def embed_minibatch(self, *args: Any, **kwargs: Any) -> tuple[Tensor, Any]:
        with self.plan.reading(self.model, self._depths):
            return super().embed_minibatch(*args, **kwargs)

    def calculate_loss(
        self, reps: list[list[Tensor]], labels: Tensor | None = None, *, with_backward: bool = False
    ) -> Tensor:
        columns = [torch.cat(column) for column in reps]
        loss = self.plan.combine(self.loss, columns, labels, self._depths)  # type: ignore[arg-type]
        if with_backward:
            loss.backward()
            loss = loss.detach()
        return loss

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), **_plan_config(self.plan)}


def _plan_config(plan: ElasticPlan) -> dict[str, Any]:
    return {
        "depths": plan.depths,
        "depth_weights": [plan.depth_weights[d] for d in plan.depths],
        "depth_sample": plan.sample,
        "matryoshka_dims": [d for d, _ in plan.dims if d is not None] or None,
    }


def plan_for(objective: Any, model: SentenceTransformer) -> ElasticPlan | None:
    """The depth plan `objective` asks for on `model` (None without `depths`); ConfigError where the
    model's backbone or pooler does not allow it."""
    if objective.depths is None:
        return None
    check_against_backbone(objective, num_layers(model), model.get_embedding_dimension(), "objective")
    order = sorted(range(len(objective.depths)), key=lambda i: objective.depths[i])
    depths = [objective.depths[i] for i in order]
    weights = objective.depth_weights or [1.0] * len(depths)
    dims: list[tuple[int | None, float]] = [(None, 1.0)]
    if objective.matryoshka_dims is not None:
        dim_weights = objective.matryoshka_weights or [1.0] * len(objective.matryoshka_dims)
        dims = list(zip(objective.matryoshka_dims, dim_weights, strict=True))
    return ElasticPlan(
        reader=DepthReader(model, depths),
        depths=depths,
        depth_weights={objective.depths[i]: float(weights[i]) for i in order},
        sample=objective.depth_sample,
        dims=dims,
    )


def elastic_loss(
    objective: Any, model: SentenceTransformer, loss: SimCSELoss | CachedSimCSELoss
) -> nn.Module:
    """The training loss for `objective`, from the SimCSE loss the trainer built (cached or not): itself,
    Matryoshka around it, or lwap's depth-elastic loss (with any Matryoshka dimensions inside it)."""
    cached = isinstance(loss, CachedSimCSELoss)
    simcse = loss.loss if cached else loss
    plan = plan_for(objective, model)
    if plan is not None:
        if cached:
            return CachedDepthElasticLoss(simcse, loss.mini_batch_size, plan)
        return DepthElasticLoss(simcse, plan)
    if objective.matryoshka_dims is None:
        return loss
    check_against_backbone(objective, 0, model.get_embedding_dimension(), "objective")
    try:
        return MatryoshkaLoss(model, loss, objective.matryoshka_dims, objective.matryoshka_weights)
    except ValueError as error:  # what sentence-transformers refuses beyond lwap's checks
        raise ConfigError(f"objective.matryoshka_dims: {error}") from None
