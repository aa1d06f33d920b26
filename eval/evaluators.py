"""sentence-transformers evaluators over lwap's data readers (used by training for model selection)."""

from __future__ import annotations

from typing import Any

from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from lwap.eval.sts_data import load_stsb


class InferenceLengthSimilarityEvaluator(EmbeddingSimilarityEvaluator):
    """EmbeddingSimilarityEvaluator that encodes at the model's inference length, not its training length.

    Training truncates to e.g. 32 tokens for speed; SimCSE evaluates STS-B dev without that truncation,
    and the saved model reads its full length, so model selection must score what will be saved.
    """

    def __init__(self, *args: Any, max_seq_length: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_seq_length = max_seq_length

    def __call__(self, model: Any, *args: Any, **kwargs: Any) -> dict[str, float]:
        if self.max_seq_length is None:
            return super().__call__(model, *args, **kwargs)
        training_length = model.max_seq_length
        model.max_seq_length = self.max_seq_length
        try:
            return super().__call__(model, *args, **kwargs)
        finally:
            model.max_seq_length = training_length


def stsb_evaluator(
    split: str = "dev", variant: str = "senteval", batch_size: int = 128, max_seq_length: int | None = None
) -> EmbeddingSimilarityEvaluator:
    """Cosine-similarity Spearman on STS-B `split` (dev for model selection, as SimCSE).

    `max_seq_length`: encode at this length whatever the model's current setting (training passes the
    backbone's inference length); None = the model's own.
    """
    pairs = load_stsb(split, variant)
    return InferenceLengthSimilarityEvaluator(
        pairs.sentences1,
        pairs.sentences2,
        [score / 5.0 for score in pairs.scores],
        main_similarity="cosine",
        similarity_fn_names=["cosine"],
        batch_size=batch_size,
        name=f"stsb-{split}",
        max_seq_length=max_seq_length,
    )
