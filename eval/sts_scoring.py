"""STS scoring: cosine similarity, Spearman × 100, `all`/`wmean` aggregation and bootstrap intervals.

The published protocol (SentEval as used by SimCSE): embed both sentences, cosine similarity, Spearman
correlation with the gold scores, no trained regressor. For the multi-file SemEval sets (STS12–16):
- `all`: every subset concatenated, one correlation (SimCSE's reported numbers);
- `wmean`: one correlation per subset, averaged with the subsets' pair counts as weights (the LWAP paper).

Each distinct sentence is embedded once for the whole suite (`embed_unique`); SentEval re-encodes every
pair, which gives the same vectors at several times the cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext

import numpy as np
from scipy.stats import rankdata, spearmanr
from sentence_transformers import SentenceTransformer

from lwap.encoding import encode
from lwap.errors import ConfigError
from lwap.eval.sts_data import StsPairs, StsTask

AGGREGATIONS = ("all", "wmean")
Scored = tuple[np.ndarray, np.ndarray]  # (predicted similarity, gold score) of one subset


def spearman_x100(predicted: Sequence[float], gold: Sequence[float]) -> float:
    return float(spearmanr(predicted, gold).statistic) * 100.0


def aggregate(subsets: Mapping[str, Scored]) -> dict:
    """Spearman × 100 per subset, `all` (concatenated) and `wmean` (pair-weighted mean of subsets)."""
    per_subset = {
        name: {"spearman": spearman_x100(pred, gold), "pairs": len(gold)}
        for name, (pred, gold) in subsets.items()
    }
    predicted = np.concatenate([pred for pred, _ in subsets.values()])
    gold = np.concatenate([g for _, g in subsets.values()])
    total = sum(entry["pairs"] for entry in per_subset.values())
    wmean = sum(entry["spearman"] * entry["pairs"] for entry in per_subset.values()) / total
    return {"all": spearman_x100(predicted, gold), "wmean": wmean, "subsets": per_subset}


def _row_spearman(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman per row of (resamples, n) arrays: Pearson of average ranks, as scipy's spearmanr."""
    a = rankdata(predicted, axis=1)
    b = rankdata(gold, axis=1)
    a -= a.mean(axis=1, keepdims=True)
    b -= b.mean(axis=1, keepdims=True)
    return (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1)) * 100.0


def bootstrap_interval(
    subsets: Mapping[str, Scored],
    aggregation: str,
    resamples: int,
    seed: int = 0,
    confidence: float = 0.95,
    chunk: int = 200,
) -> list[float]:
    """Percentile bootstrap interval of the task score, resampling pairs with replacement.

    `all` resamples the concatenated pairs; `wmean` resamples within each subset (the weights stay the
    subset sizes). Not `scipy.stats.bootstrap`: it cannot resample within strata, which `wmean` needs;
    one loop serves both. Spearman itself is scipy's rank transform, vectorised over resamples.
    """
    rng = np.random.default_rng(seed)
    if aggregation == "all":
        groups = [
            (
                np.concatenate([p for p, _ in subsets.values()]),
                np.concatenate([g for _, g in subsets.values()]),
            )
        ]
    else:
        groups = list(subsets.values())
    sizes = np.array([len(g) for _, g in groups], dtype=float)
    scores = []
    for start in range(0, resamples, chunk):
        count = min(chunk, resamples - start)
        per_group = []
        for predicted, gold in groups:
            index = rng.integers(0, len(gold), size=(count, len(gold)))
            per_group.append(_row_spearman(predicted[index], gold[index]))
        scores.append((np.stack(per_group, axis=1) * sizes).sum(axis=1) / sizes.sum())
    values = np.concatenate(scores)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.nanpercentile(values, [tail, 100.0 - tail])
    return [float(low), float(high)]


def embed_unique(
    model: SentenceTransformer,
    sentences: Iterable[str],
    *,
    batch_size: int = 128,
    precision: str = "fp32",
    show_progress_bar: bool = False,
) -> dict[str, np.ndarray]:
    """Unit-length embedding of each distinct sentence, encoded once."""
    unique = list(dict.fromkeys(sentences))
    vectors = encode(
        model,
        unique,
        batch_size=batch_size,
        normalize=True,
        precision=precision,
        show_progress_bar=show_progress_bar,
    )
    return dict(zip(unique, vectors, strict=True))


def cosine_scores(pairs: StsPairs, vectors: Mapping[str, np.ndarray]) -> Scored:
    """(cosine similarity, gold) arrays of `pairs`, from unit-length embeddings."""
    a = np.stack([vectors[s] for s in pairs.sentences1]).astype(np.float64)
    b = np.stack([vectors[s] for s in pairs.sentences2]).astype(np.float64)
    return (a * b).sum(axis=1), np.asarray(pairs.scores, dtype=np.float64)


def scored_subsets(task: StsTask, vectors: Mapping[str, np.ndarray]) -> dict[str, Scored]:
    """(cosine similarity, gold) of each subset of `task`, ready for `aggregate`."""
    return {name: cosine_scores(pairs, vectors) for name, pairs in task.subsets.items()}


def _sentences(tasks: Iterable[StsTask]) -> list[str]:
    return [s for task in tasks for p in task.subsets.values() for s in (*p.sentences1, *p.sentences2)]


def score_sts_tasks(
    model: SentenceTransformer,
    tasks: Sequence[StsTask],
    *,
    aggregation: str = "all",
    batch_size: int = 128,
    precision: str = "fp32",
    bootstrap: int = 0,
    seed: int = 0,
    show_progress_bar: bool = False,
    while_encoding_first: Callable[[], AbstractContextManager[object]] | None = None,
    vectors_out: dict[str, np.ndarray] | None = None,
    cosines_out: dict[str, np.ndarray] | None = None,
) -> dict[str, dict]:
    """Score every task, encoding each distinct sentence of the whole suite once.

    The first task's sentences are encoded in a call of their own, inside `while_encoding_first()` if
    given (the layer-attention recorder uses this to see exactly the STS-B test sentences).
    `vectors_out`, if given, receives every sentence's embedding (the geometry measures reuse them);
    `cosines_out` each pair's cosine, keyed `TASK/SUBSET`, in the data's pair order (a bootstrap over
    test pairs between two models needs them; Spearman alone cannot be resampled).
    """
    if aggregation not in AGGREGATIONS:
        raise ConfigError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if not tasks:
        return {}
    options = {"batch_size": batch_size, "precision": precision, "show_progress_bar": show_progress_bar}
    with while_encoding_first() if while_encoding_first else nullcontext():
        vectors = embed_unique(model, _sentences(tasks[:1]), **options)
    vectors.update(embed_unique(model, [s for s in _sentences(tasks[1:]) if s not in vectors], **options))
    if vectors_out is not None:
        vectors_out.update(vectors)
    results = {}
    for task in tasks:
        scored = scored_subsets(task, vectors)
        if cosines_out is not None:
            cosines_out.update({f"{task.name}/{name}": cos for name, (cos, _) in scored.items()})
        entry = aggregate(scored)
        entry.update(
            score=entry[aggregation],
            pairs=task.pairs,
            unscored_skipped=task.unscored,
            variant=task.variant,
            sources=task.sources,
        )
        if bootstrap:
            entry["ci95"] = bootstrap_interval(scored, aggregation, bootstrap, seed)
        results[task.name] = entry
    return results
