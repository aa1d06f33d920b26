"""Semantic search scores (nDCG@10, MRR@10, Recall@100, …) through sentence-transformers' evaluator.

`InformationRetrievalEvaluator` embeds queries and documents, ranks the whole corpus by cosine similarity
and computes the metrics; lwap only converts a `BeirDataset` into its inputs. It treats every judgement
with a positive score as relevant (binary relevance); mteb (`--mteb`) uses graded relevance through
pytrec_eval. The two agree on binary datasets such as SciFact.
"""

from __future__ import annotations

from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
from sentence_transformers.util import cos_sim

from lwap.encoding import autocast
from lwap.eval.beir_data import BeirDataset

# metric name in lwap's results -> (sentence-transformers key suffix)
SEARCH_METRICS = {
    "ndcg@10": "ndcg@10",
    "mrr@10": "mrr@10",
    "recall@100": "recall@100",
    "recall@10": "recall@10",
    "recall@1": "recall@1",
    "map@100": "map@100",
}
MAIN_SEARCH_METRIC = "ndcg@10"


def _cosine_fp32(queries: torch.Tensor, documents: torch.Tensor) -> torch.Tensor:
    """Cosine scores in fp32 even under bf16 autocast: bf16 scores (8-bit mantissa) would tie many ranks."""
    with torch.autocast(queries.device.type, enabled=False):  # the device whose autocast is active
        return cos_sim(queries.float(), documents.float())


def search_evaluator_arguments(dataset: BeirDataset) -> dict[str, Any]:
    """`InformationRetrievalEvaluator`'s data and metric arguments for `dataset`: the same for `lwap eval`
    and a BEIR dev set in training (`SEARCH_METRICS`, cosine in fp32, judgement score > 0 = relevant)."""
    return {
        "queries": dataset.queries,
        "corpus": {doc_id: dataset.document_text(doc_id) for doc_id in dataset.corpus},
        "relevant_docs": {
            q: {d for d, score in docs.items() if score > 0} for q, docs in dataset.qrels.items()
        },
        "mrr_at_k": [10],
        "ndcg_at_k": [10],
        "accuracy_at_k": [1],
        "precision_recall_at_k": [1, 10, 100],
        "map_at_k": [100],
        "score_functions": {"cosine": _cosine_fp32},
        "main_score_function": "cosine",
    }


def score_search(
    model: SentenceTransformer,
    dataset: BeirDataset,
    *,
    batch_size: int = 128,
    precision: str = "fp32",
    show_progress_bar: bool = False,
) -> dict:
    """Retrieval metrics × 100 over the judged queries of `dataset`, cosine similarity."""
    evaluator = InformationRetrievalEvaluator(
        **search_evaluator_arguments(dataset),
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
        write_csv=False,
        name=dataset.name,
    )
    with autocast(precision, model.device):
        metrics = evaluator(model)
    prefix = f"{dataset.name}_cosine_"
    scores = {ours: float(metrics[prefix + theirs]) * 100.0 for ours, theirs in SEARCH_METRICS.items()}
    return search_entry(dataset, scores)


def search_entry(dataset: BeirDataset, scores: dict[str, float]) -> dict[str, Any]:
    """One search task's results entry: the metrics (× 100), the main score and what was searched —
    the same shape whichever engine (lwap's own, mteb) computed the metrics."""
    return {
        **scores,
        "score": scores[MAIN_SEARCH_METRIC],
        "queries": len(dataset.queries),
        "documents": len(dataset.corpus),
        "judgements": sum(len(d) for d in dataset.qrels.values()),
        "folder": dataset.folder,
        "split": dataset.split,
        "notes": dataset.notes,
    }
