"""STS aggregation, bootstrap intervals and search metrics against answers worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from eval_mirror import fruit_model, write_beir, write_sts_pairs
from scipy.stats import spearmanr

from lwap.eval.beir_data import load_beir
from lwap.eval.search import score_search
from lwap.eval.sts_data import StsPairs, StsTask, read_sts_pair_files
from lwap.eval.sts_scoring import _row_spearman, aggregate, bootstrap_interval, score_sts_tasks

# Subset A: 3 pairs, perfectly ranked (rho 100). Subset B: 4 pairs, gold ranks [1, 3, 2, 4] (rho 80).
A = (np.array([0.1, 0.2, 0.3]), np.array([3.0, 4.0, 5.0]))
B = (np.array([0.4, 0.5, 0.6, 0.7]), np.array([0.0, 2.0, 1.0, 4.0]))


def test_all_and_wmean_differ_as_worked_out_by_hand() -> None:
    result = aggregate({"A": A, "B": B})
    assert result["subsets"]["A"] == {"spearman": pytest.approx(100.0), "pairs": 3}
    assert result["subsets"]["B"] == {"spearman": pytest.approx(80.0), "pairs": 4}
    assert result["wmean"] == pytest.approx((3 * 100 + 4 * 80) / 7)  # 88.57
    # concatenated: predictions ranked 1..7, gold [3,4,5,0,2,1,4] ranked [4,5.5,7,1,3,2,5.5]
    assert result["all"] == pytest.approx(-6.5 / math.sqrt(28 * 27.5) * 100)  # -23.42


def test_single_subset_all_equals_wmean() -> None:
    result = aggregate({"test": B})
    assert result["all"] == result["wmean"] == pytest.approx(80.0)


def test_vectorised_spearman_equals_scipy_with_ties() -> None:
    rng = np.random.default_rng(0)
    predicted = rng.normal(size=(5, 40))
    gold = rng.integers(0, 6, size=(5, 40)).astype(float)  # many ties, as STS gold scores
    expected = [spearmanr(p, g).statistic * 100 for p, g in zip(predicted, gold, strict=True)]
    np.testing.assert_allclose(_row_spearman(predicted, gold), expected, rtol=1e-10)


def test_bootstrap_interval() -> None:
    rng = np.random.default_rng(1)
    gold = rng.uniform(0, 5, 300)
    noisy = {
        "x": (gold + rng.normal(0, 1.5, 300), gold),
        "y": (gold[:100] + rng.normal(0, 3, 100), gold[:100]),
    }
    point = aggregate(noisy)
    for aggregation in ("all", "wmean"):
        low, high = bootstrap_interval(noisy, aggregation, resamples=500, seed=3)
        assert low < point[aggregation] < high and high - low < 20
        assert [low, high] == bootstrap_interval(noisy, aggregation, resamples=500, seed=3)  # seeded
    perfect = {"x": (gold, gold)}
    assert bootstrap_interval(perfect, "all", resamples=50) == [pytest.approx(100.0), pytest.approx(100.0)]


def test_sts_scoring_with_known_embeddings_skips_unscored_pairs(tmp_path) -> None:
    """apple·banana·cherry one-hot vectors: cosine(apple, apple banana) = 1/sqrt(2), etc."""
    rows = [
        ("apple", "apple", "5"),
        ("apple", "apple banana", "3"),
        ("apple", "banana", "0"),
        ("cherry", "cherry", ""),  # unscored: skipped, not counted, not correlated
        ("banana cherry", "cherry", "4"),
    ]
    write_sts_pairs(tmp_path, "fruit", rows)
    pairs = read_sts_pair_files(tmp_path / "STS.input.fruit.txt", tmp_path / "STS.gs.fruit.txt")
    task = StsTask("fruit", {"fruit": pairs}, "senteval")
    result = score_sts_tasks(fruit_model(), [task])["fruit"]
    assert result["pairs"] == 4 and result["unscored_skipped"] == 1
    # cosines [1, .707, 0, .707] vs gold [5, 3, 0, 4]: ranks [4, 2.5, 1, 2.5] vs [4, 2, 1, 3]
    assert result["score"] == pytest.approx(spearmanr([1, 0.7071, 0, 0.7071], [5, 3, 0, 4]).statistic * 100)
    assert result["score"] == pytest.approx(100 * 4.5 / math.sqrt(4.5 * 5))


def test_each_distinct_sentence_is_encoded_once() -> None:
    model = fruit_model()
    seen: list[int] = []
    model[0].register_forward_hook(lambda _m, _i, out: seen.append(len(out["sentence_embedding"])))
    one = StsPairs(["apple", "banana", "apple"], ["banana", "cherry", "apple cherry"], [1, 2, 3])
    two = StsPairs(["cherry", "apple"], ["apple cherry", "banana banana"], [4, 5])
    score_sts_tasks(model, [StsTask("a", {"x": one}, "raw"), StsTask("b", {"y": two}, "raw")], batch_size=2)
    assert sum(seen) == 5  # apple, banana, cherry, "apple cherry", "banana banana"


def test_search_metrics_on_a_three_document_corpus(tmp_path) -> None:
    """Ranks by cosine with one-hot word vectors (worked out by hand):
    q1 "apple"                -> d1 d2|d3; relevant d1 at rank 1: nDCG 1, RR 1
    q2 "banana banana cherry" -> d2 (.89) d3 (.45) d1 (0); relevant d3 at 2: nDCG 1/log2(3), RR 1/2
    q3 "cherry apple apple"   -> d1 (.89) d3 (.45) d2 (0); relevant d2, d3 at 3 and 2:
                                  nDCG (1/log2(3) + 1/log2(4)) / (1 + 1/log2(3)), RR 1/2
    q4 has only a zero-relevance judgement: left out.
    """
    docs = [{"_id": "d1", "title": "", "text": "apple"}, {"_id": "d2", "title": "banana", "text": ""}]
    docs.append({"_id": "d3", "title": "", "text": "cherry"})
    queries = [
        {"_id": "q1", "text": "apple"},
        {"_id": "q2", "text": "banana banana cherry"},
        {"_id": "q3", "text": "cherry apple apple"},
        {"_id": "q4", "text": "apple"},
    ]
    qrels = [("q1", "d1", 1), ("q2", "d3", 1), ("q3", "d2", 1), ("q3", "d3", 1), ("q4", "d1", 0)]
    data = load_beir(write_beir(tmp_path / "fruit", docs, queries, qrels))
    result = score_search(fruit_model(), data)
    third = 1 / math.log2(3)
    assert result["queries"] == 3 and result["documents"] == 3
    assert result["ndcg@10"] == pytest.approx(100 * (1 + third + (third + 0.5) / (1 + third)) / 3)  # 77.48
    assert result["mrr@10"] == pytest.approx(100 * (1 + 0.5 + 0.5) / 3)
    assert result["recall@1"] == pytest.approx(100 / 3)
    assert result["recall@10"] == result["recall@100"] == pytest.approx(100.0)
    assert result["score"] == result["ndcg@10"]


@pytest.mark.slow
def test_training_stsb_dev_evaluator_agrees_with_own_scorer(tiny_bert) -> None:
    """`stsb_evaluator` (sentence-transformers, used for model selection) and lwap's scorer: same number."""
    from lwap import build_model
    from lwap.eval import stsb_evaluator
    from lwap.eval.sts_data import load_sts_task

    model = build_model(str(tiny_bert), "lwap").eval()
    evaluator = stsb_evaluator("dev", batch_size=64)
    theirs = evaluator(model)[evaluator.primary_metric] * 100
    ours = score_sts_tasks(model, [load_sts_task("stsb", split="dev")])["stsb"]
    assert ours["pairs"] == 1500
    assert theirs == pytest.approx(ours["score"], abs=0.01)
