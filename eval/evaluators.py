"""sentence-transformers evaluators over lwap's data readers (used by training for model selection)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sentence_transformers.sentence_transformer.evaluation import (
    EmbeddingSimilarityEvaluator,
    InformationRetrievalEvaluator,
)

from lwap.encoding import autocast
from lwap.eval.beir_data import BeirDataset
from lwap.eval.search import search_evaluator_arguments
from lwap.eval.sts_data import StsPairs, load_stsb


class AtLengthAndPrecision:
    """Mixin for a sentence-transformers evaluator: encode at `max_seq_length` (not the model's current,
    training, length) and in `precision` (bf16: autocast on the model's device).

    Training truncates to e.g. 32 tokens for speed; SimCSE evaluates STS-B dev without that truncation,
    and the saved model reads its full length, so model selection must score what will be saved. A long
    dev corpus may be scored shorter and in bf16 (`eval.max_seq_length`, `eval.precision`) to stay cheap.
    """

    max_seq_length: int | None = None
    # not `precision`: EmbeddingSimilarityEvaluator has one of its own (quantized embeddings)
    autocast_precision: str = "fp32"

    def __init__(
        self, *args: Any, max_seq_length: int | None = None, precision: str = "fp32", **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.max_seq_length = max_seq_length
        self.autocast_precision = precision

    def __call__(self, model: Any, *args: Any, **kwargs: Any) -> dict[str, float]:
        training_length = model.max_seq_length
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        try:
            with autocast(self.autocast_precision, model.device):
                return super().__call__(model, *args, **kwargs)  # type: ignore[misc]
        finally:
            model.max_seq_length = training_length


class InferenceLengthSimilarityEvaluator(AtLengthAndPrecision, EmbeddingSimilarityEvaluator):
    """EmbeddingSimilarityEvaluator at a given length and precision (`AtLengthAndPrecision`)."""


class InferenceLengthRetrievalEvaluator(AtLengthAndPrecision, InformationRetrievalEvaluator):
    """InformationRetrievalEvaluator at a given length and precision (`AtLengthAndPrecision`)."""


def similarity_evaluator(
    pairs: StsPairs, name: str, *, batch_size: int, max_seq_length: int | None, precision: str = "fp32"
) -> InferenceLengthSimilarityEvaluator:
    """Cosine Spearman of a scored pairs set (a user's dev file): its scores on any scale."""
    return InferenceLengthSimilarityEvaluator(
        pairs.sentences1,
        pairs.sentences2,
        list(pairs.scores),
        main_similarity="cosine",
        similarity_fn_names=["cosine"],
        batch_size=batch_size,
        name=name,
        max_seq_length=max_seq_length,
        precision=precision,
    )


def retrieval_evaluator(
    dataset: BeirDataset, name: str, *, batch_size: int, max_seq_length: int | None, precision: str = "fp32"
) -> InferenceLengthRetrievalEvaluator:
    """nDCG@10, MRR@10, Recall@1/10/100 and MAP@100 of a BEIR set, as `lwap eval` scores search
    (`lwap.eval.search`); the corpus is encoded once per evaluation."""
    return InferenceLengthRetrievalEvaluator(
        **search_evaluator_arguments(dataset),
        batch_size=batch_size,
        show_progress_bar=False,
        write_csv=False,
        name=name,
        max_seq_length=max_seq_length,
        precision=precision,
    )


class GeometrySimilarityEvaluator(InferenceLengthSimilarityEvaluator):
    """Also returns alignment, uniformity and anisotropy (`lwap.eval.geometry`) of the same embeddings.

    So training logs SimCSE's Figure-2 measures at every dev evaluation (metrics.csv, TensorBoard) at no
    extra encoding: the embeddings the Spearman score was computed from are kept as `embed_inputs` returns
    them. The measures are logged only; model selection stays on the Spearman score.
    """

    def __init__(self, *args: Any, gold: Sequence[float], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gold = list(gold)  # on the 0-5 scale (the parent holds them scaled to 0-1)
        self._embedded: list[np.ndarray] = []

    def embed_inputs(self, model: Any, sentences: Any, **kwargs: Any) -> np.ndarray:
        embeddings = super().embed_inputs(model, sentences, **kwargs)
        self._embedded.append(embeddings)
        return embeddings

    def __call__(self, model: Any, *args: Any, **kwargs: Any) -> dict[str, float]:
        from lwap.eval.geometry import MEASURES, has_positive_pair, sts_geometry

        self._embedded = []
        metrics = super().__call__(model, *args, **kwargs)
        # embedded: sentences1, then sentences2; no positive pair: alignment undefined, no geometry
        if has_positive_pair(self.gold) and len(self._embedded) == 2 and not self.precision:
            vectors = dict(zip(self.sentences1, self._embedded[0], strict=True))
            vectors.update(zip(self.sentences2, self._embedded[1], strict=True))
            geometry = sts_geometry(self.sentences1, self.sentences2, self.gold, vectors)
            metrics.update(self.prefix_name_to_metrics({m: geometry[m] for m in MEASURES}, self.name))
        self._embedded = []
        return metrics


def stsb_evaluator(
    split: str = "dev",
    variant: str = "senteval",
    batch_size: int = 128,
    max_seq_length: int | None = None,
    precision: str = "fp32",
) -> EmbeddingSimilarityEvaluator:
    """Cosine-similarity Spearman on STS-B `split` (dev for model selection, as SimCSE), with the
    split's alignment, uniformity and anisotropy as extra metrics. Training passes `dev`: the test set
    never drives training, and `lwap eval` reports the test-set geometry.

    `max_seq_length`: encode at this length whatever the model's current setting (training passes the
    backbone's inference length); None = the model's own. `precision`: fp32 or bf16 (autocast).
    """
    pairs = load_stsb(split, variant)
    return GeometrySimilarityEvaluator(
        pairs.sentences1,
        pairs.sentences2,
        [score / 5.0 for score in pairs.scores],
        main_similarity="cosine",
        similarity_fn_names=["cosine"],
        batch_size=batch_size,
        name=f"stsb-{split}",
        max_seq_length=max_seq_length,
        precision=precision,
        gold=pairs.scores,
    )
