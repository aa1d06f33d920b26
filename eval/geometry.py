"""Embedding geometry: alignment and uniformity (Wang & Isola, 2020), anisotropy (Ethayarajh, 2019).

The measures SimCSE's analysis rests on (its Figure 2 and section 5), computed as SimCSE describes:
- embeddings normalized to unit length first;
- alignment = mean ||f(x) - f(x+)||^α, α = 2, over the positive pairs: STS pairs with gold score ≥ 4.0
  (the paper: "pairs with a score higher than 4"; SimCSE released no code for it, and its authors point to
  Wang & Isola's `lalign`, which this follows);
- uniformity = log mean exp(-t ||f(x) - f(y)||^2), t = 2, over every pair of distinct sentences of the set
  (Wang & Isola's `lunif`: `torch.pdist`, i.e. each unordered pair once, no self-pairs);
- anisotropy = mean cosine between two different sentences. Ethayarajh estimates it from random pairs;
  here it is the exact mean over all n(n-1)/2 distinct pairs, which that estimate converges to, from the
  sum vector (no seed, no sampling error, O(n·d)).

Lower is better for all three: alignment ≥ 0 (0 = positives coincide), uniformity ≤ 0 (more negative =
spread more evenly over the sphere; its floor for n points is about -4), anisotropy in [-1/(n-1), 1]
(1 = every embedding points the same way). Everything is float64 whatever the encoding precision, so
bf16 and fp32 embeddings are measured alike (the difference is the encoder's, as for the STS scores).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import logsumexp

ALIGNMENT_ALPHA = 2.0
UNIFORMITY_T = 2.0
POSITIVE_MIN_SCORE = 4.0  # on STS's 0-5 gold scale
MEASURES = ("alignment", "uniformity", "anisotropy")


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length in float64 (a zero row stays zero rather than becoming NaN)."""
    x = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def alignment(x: np.ndarray, y: np.ndarray, alpha: float = ALIGNMENT_ALPHA) -> float:
    """Mean ||x_i - y_i||^alpha over paired rows, after normalizing both sides."""
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(
            f"alignment needs two equally long, non-empty sets of rows, got {len(x)} and {len(y)}"
        )
    distance = np.linalg.norm(unit_rows(x) - unit_rows(y), axis=1)
    return float(np.mean(distance**alpha))


def uniformity(vectors: np.ndarray, t: float = UNIFORMITY_T, block: int = 512) -> float:
    """log mean over i<j of exp(-t ||x_i - x_j||^2), after normalizing; by row blocks (memory O(block·n)).

    For unit vectors ||x_i - x_j||^2 = 2 - 2 x_i·x_j; the mean of exponentials is taken as a logsumexp.
    """
    x = unit_rows(vectors)
    n = len(x)
    if n < 2:
        raise ValueError(f"uniformity needs at least 2 embeddings, got {n}")
    parts = []
    for start in range(0, n - 1, block):
        rows = x[start : start + block]
        squared = np.maximum(2.0 - 2.0 * rows @ x.T, 0.0)
        i, j = np.triu_indices(len(rows), k=1, m=n - start)  # pairs (start+i, start+j) with i<j
        parts.append(logsumexp(-t * squared[:, start:][i, j]))
    return float(logsumexp(parts) - np.log(n * (n - 1) / 2))


def anisotropy(vectors: np.ndarray) -> float:
    """Mean cosine over all n(n-1)/2 pairs of distinct rows: (||Σ x_i||² - Σ ||x_i||²) / (n(n-1))."""
    x = unit_rows(vectors)
    n = len(x)
    if n < 2:
        raise ValueError(f"anisotropy needs at least 2 embeddings, got {n}")
    total = x.sum(axis=0)
    return float((total @ total - (x * x).sum()) / (n * (n - 1)))


def has_positive_pair(gold: Sequence[float], min_score: float = POSITIVE_MIN_SCORE) -> bool:
    """Whether alignment is defined on this set: some pair scores at least `min_score`."""
    return any(score >= min_score for score in gold)


def sts_geometry(
    sentences1: Sequence[str],
    sentences2: Sequence[str],
    gold: Sequence[float],
    vectors: Mapping[str, np.ndarray],
    min_score: float = POSITIVE_MIN_SCORE,
) -> dict[str, float | int]:
    """The three measures over one STS set, given each distinct sentence's embedding.

    Positives: the pairs with gold ≥ `min_score`. Uniformity and anisotropy: every distinct sentence of
    the set (both sides), each once, so a sentence that recurs in several pairs is not weighted up.
    """
    if not has_positive_pair(gold, min_score):
        raise ValueError(f"no pair has a gold score >= {min_score}: alignment is undefined")
    positives = [k for k, score in enumerate(gold) if score >= min_score]
    x = np.stack([vectors[sentences1[k]] for k in positives])
    y = np.stack([vectors[sentences2[k]] for k in positives])
    distinct = list(dict.fromkeys([*sentences1, *sentences2]))
    everything = np.stack([vectors[s] for s in distinct])
    return {
        "alignment": alignment(x, y),
        "uniformity": uniformity(everything),
        "anisotropy": anisotropy(everything),
        "positive_pairs": len(positives),
        "sentences": len(distinct),
        "sentence_pairs": len(distinct) * (len(distinct) - 1) // 2,  # what uniformity and anisotropy average
    }


def protocol(split: str = "test") -> dict[str, object]:
    """How the figures were computed, for results.json."""
    return {
        "data": f"STS-B {split}",
        "normalized": True,
        "alignment": f"mean ||x - y||^{ALIGNMENT_ALPHA:g} over pairs with gold >= {POSITIVE_MIN_SCORE:g}/5",
        "uniformity": f"log mean exp(-{UNIFORMITY_T:g} ||x - y||^2) over all pairs of distinct sentences",
        "anisotropy": "mean cosine over all pairs of distinct sentences (exact, no sampling)",
        "better": "lower, for all three",
        "source": "Wang & Isola 2020 (lalign, lunif) as used by SimCSE (Gao et al. 2021, Fig. 2); "
        "Ethayarajh 2019",
    }
