"""sentence-transformers evaluators over lwap's data readers (used by training for model selection)."""

from __future__ import annotations

from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from lwap.eval.sts_data import load_stsb


def stsb_evaluator(
    split: str = "dev", variant: str = "senteval", batch_size: int = 128
) -> EmbeddingSimilarityEvaluator:
    """Cosine-similarity Spearman on STS-B `split` (dev for model selection, as SimCSE)."""
    pairs = load_stsb(split, variant)
    return EmbeddingSimilarityEvaluator(
        pairs.sentences1,
        pairs.sentences2,
        [score / 5.0 for score in pairs.scores],
        main_similarity="cosine",
        similarity_fn_names=["cosine"],
        batch_size=batch_size,
        name=f"stsb-{split}",
    )
