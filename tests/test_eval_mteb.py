"""The mteb path: offline custom tasks, the model really encoded, and the same scores as lwap's own path."""

from __future__ import annotations

import socket

import pytest
import torch
from eval_mirror import fruit_model, make_mirror, write_beir

from lwap import build_model, find_lwap
from lwap.eval.beir_data import load_beir
from lwap.eval.mteb_tasks import evaluate_with_mteb
from lwap.eval.search import score_search
from lwap.eval.sts_data import STS_TASKS, load_sts_task
from lwap.eval.sts_scoring import score_sts_tasks


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror")
    make_mirror(root, pairs=10)
    return root


@pytest.mark.slow
def test_mteb_encodes_the_lwap_model_and_matches_own_scores(
    tiny_bert, mirror, monkeypatch, no_network
) -> None:
    """Would fail if mteb encoded anything but this model: the LWAP module must see every text mteb scores,
    the scores must equal lwap's own, and a differently initialised LWAP head must score differently."""
    monkeypatch.setenv("LWAP_DATA_DIR", str(mirror))
    tasks = [load_sts_task(name) for name in STS_TASKS]
    search = [load_beir(mirror / "beir-scifact", name="scifact")]
    torch.manual_seed(0)
    model = build_model(str(tiny_bert), "lwap").eval()
    seen: list[int] = []
    find_lwap(model).register_forward_hook(lambda _m, _i, out: seen.append(len(out["sentence_embedding"])))
    sts, found = evaluate_with_mteb(model, tasks, search, aggregation="wmean", batch_size=16)
    texts = sum(entry["texts_encoded"] for entry in sts.values())
    assert sum(seen) == texts + len(search[0].queries) + len(search[0].corpus)
    own = score_sts_tasks(model, tasks, aggregation="wmean", batch_size=16)
    own_search = score_search(model, search[0], batch_size=16)
    for name in STS_TASKS:
        assert sts[name]["wmean"] == pytest.approx(own[name]["wmean"], abs=1e-3), name
    for subset, entry in own["sts12"]["subsets"].items():
        assert sts["sts12"]["subsets"][subset]["spearman"] == pytest.approx(entry["spearman"], abs=1e-3)
    for metric in ("ndcg@10", "mrr@10", "recall@100"):
        assert found["scifact"][metric] == pytest.approx(own_search[metric], abs=1e-3)  # mteb rounds

    torch.manual_seed(1)
    other = build_model(str(tiny_bert), "lwap").eval()
    other_sts, _ = evaluate_with_mteb(other, tasks[:1], [], aggregation="wmean", batch_size=16)
    assert other_sts["sts12"]["wmean"] != pytest.approx(sts["sts12"]["wmean"], abs=1e-3)


def test_mteb_all_aggregation_and_known_search_answer(tmp_path, no_network) -> None:
    docs = [{"_id": "d1", "title": "", "text": "apple"}, {"_id": "d2", "title": "banana", "text": ""}]
    docs.append({"_id": "d3", "title": "", "text": "cherry"})
    queries = [{"_id": "q1", "text": "apple"}, {"_id": "q2", "text": "banana banana cherry"}]
    data = load_beir(write_beir(tmp_path / "fruit", docs, queries, [("q1", "d1", 1), ("q2", "d3", 1)]))
    _, search = evaluate_with_mteb(fruit_model(), [], [data])
    assert search["fruit"]["mrr@10"] == pytest.approx(100 * (1 + 0.5) / 2, abs=1e-3)
    assert search["fruit"]["ndcg@10"] == pytest.approx(score_search(fruit_model(), data)["ndcg@10"], abs=1e-3)


@pytest.mark.slow
def test_minilm_stsb_test_published_figure_and_mteb_agreement(no_network) -> None:
    """all-MiniLM-L6-v2 with its own mean pooling: 82.03 on STS-B test (published); mteb within 0.01."""
    from lwap import load_model

    model = load_model("sentence-transformers/all-MiniLM-L6-v2")
    stsb = [load_sts_task("stsb")]
    own = score_sts_tasks(model, stsb)["stsb"]["score"]
    assert own == pytest.approx(82.03, abs=0.05)
    via_mteb, _ = evaluate_with_mteb(model, stsb, [])
    assert via_mteb["stsb"]["score"] == pytest.approx(own, abs=0.01)
