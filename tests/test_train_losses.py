"""SimCSELoss: α = 1 is exactly MNRL; α ≠ 1 follows SimCSE's formula; negatives gather across processes."""

from __future__ import annotations

import math
import os
import socket

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from lwap.train.losses import SimCSELoss


def reference_simcse(
    anchors: torch.Tensor, docs: list[torch.Tensor], tau: float, alpha: float
) -> torch.Tensor:
    """SimCSE (Gao et al., eq. 5 with weighted hard negatives), written out row by row."""
    positives, negatives = docs[0], docs[1:]
    losses = []
    for i in range(anchors.shape[0]):
        logits = [F.cosine_similarity(anchors[i], p, dim=0) / tau for p in positives]
        for negative in negatives:
            for j, n in enumerate(negative):
                bias = math.log(alpha) if j == i else 0.0  # α only on the anchor's own hard negative
                logits.append(F.cosine_similarity(anchors[i], n, dim=0) / tau + bias)
        logits = torch.stack(logits)
        losses.append(-(logits[i] - torch.logsumexp(logits, dim=0)))
    return torch.stack(losses).mean()


def embeddings(batch: int = 6, dim: int = 16, columns: int = 3, seed: int = 0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, dim, generator=generator) for _ in range(columns)]


def test_alpha_one_equals_mnrl_exactly() -> None:
    emb = embeddings()
    ours = SimCSELoss(model=None, temperature=0.05, hard_negative_weight=1.0)
    mnrl = MultipleNegativesRankingLoss(model=None, scale=20.0)
    labels = torch.zeros(6)
    assert torch.equal(
        ours.compute_loss_from_embeddings(emb, labels), mnrl.compute_loss_from_embeddings(emb, labels)
    )
    torch.testing.assert_close(
        ours.compute_loss_from_embeddings(emb, labels), reference_simcse(emb[0], emb[1:], 0.05, 1.0)
    )


@pytest.mark.parametrize("alpha", [0.5, 2.0, 10.0])
def test_alpha_follows_the_formula(alpha: float) -> None:
    emb = embeddings()
    labels = torch.zeros(6)
    ours = SimCSELoss(model=None, temperature=0.05, hard_negative_weight=alpha).compute_loss_from_embeddings(
        emb, labels
    )
    plain = SimCSELoss(model=None, temperature=0.05).compute_loss_from_embeddings(emb, labels)
    torch.testing.assert_close(ours, reference_simcse(emb[0], emb[1:], 0.05, alpha))
    assert (ours > plain) == (alpha > 1)  # a heavier hard negative makes the task harder


def test_alpha_e_is_lwaps_plus_one() -> None:
    """LWAP's code (nlpods/LayerAttPooler cl/models.py lines 252-257, hard_negative_weight 1.0 by default)
    adds 1.0 to each anchor's own hard-negative logit cos/τ, then cross-entropy: lwap's α = e."""
    emb = embeddings()
    anchors, positives, negatives = emb
    logits = torch.cat(
        [F.normalize(anchors) @ F.normalize(positives).T, F.normalize(anchors) @ F.normalize(negatives).T], 1
    )
    logits = logits / 0.05 + torch.cat([torch.zeros(6, 6), torch.eye(6) * 1.0], 1)
    theirs = F.cross_entropy(logits, torch.arange(6))
    ours = SimCSELoss(model=None, temperature=0.05, hard_negative_weight=math.e)
    torch.testing.assert_close(ours.compute_loss_from_embeddings(emb, torch.zeros(6)), theirs)


@pytest.mark.parametrize("alpha", [1.0, 2.5])
def test_several_hard_negatives_by_hand(alpha: float) -> None:
    """k = 3 hard-negative columns (data.hard_negative_columns): InfoNCE over [positives; negatives_1;
    negatives_2; negatives_3] of the batch, as one explicit logit matrix, log α added at each anchor's
    own three hard negatives; the loss and the gradients of every column agree."""
    batch, k, tau = 5, 3, 0.05
    emb = [e.requires_grad_() for e in embeddings(batch=batch, columns=2 + k, seed=7)]
    ours = SimCSELoss(model=None, temperature=tau, hard_negative_weight=alpha)
    value = ours.compute_loss_from_embeddings(emb, torch.zeros(batch))
    grads = torch.autograd.grad(value, emb)

    anchors, candidates = F.normalize(emb[0], dim=1), F.normalize(torch.cat(emb[1:]), dim=1)
    logits = anchors @ candidates.T / tau  # (batch, (1 + k) × batch)
    own = torch.zeros(batch, (1 + k) * batch)
    for j in range(1, k + 1):
        own[torch.arange(batch), j * batch + torch.arange(batch)] = math.log(alpha)
    by_hand = F.cross_entropy(logits + own, torch.arange(batch))
    torch.testing.assert_close(value, by_hand)
    for got, expected in zip(grads, torch.autograd.grad(by_hand, emb), strict=True):
        torch.testing.assert_close(got, expected)
    torch.testing.assert_close(value, reference_simcse(emb[0], emb[1:], tau, alpha))
    if alpha != 1.0:  # every negative column counts: dropping the last one changes the loss
        fewer = ours.compute_loss_from_embeddings(emb[:-1], torch.zeros(batch))
        assert not torch.isclose(fewer, value)


def test_pairs_have_no_hard_negative_term() -> None:
    emb = embeddings(columns=2)
    labels = torch.zeros(6)
    weighted = SimCSELoss(model=None, hard_negative_weight=3.0).compute_loss_from_embeddings(emb, labels)
    torch.testing.assert_close(weighted, reference_simcse(emb[0], emb[1:], 0.05, 1.0))


def test_unsupervised_encodes_each_sentence_twice(tiny_bert) -> None:
    from lwap import build_model

    model = build_model(str(tiny_bert), "mean").eval()  # eval: no dropout, so both views are identical
    features = model.preprocess(["a cat sits", "dogs bark loudly", "rain falls"])
    labels = torch.zeros(3)
    one_column = SimCSELoss(model).forward([dict(features)], labels)
    two_columns = MultipleNegativesRankingLoss(model, scale=20.0).forward(
        [dict(features), dict(features)], labels
    )
    torch.testing.assert_close(one_column, two_columns)
    model.train()  # with dropout the two views differ, so the loss changes
    torch.manual_seed(0)
    assert not torch.allclose(SimCSELoss(model).forward([dict(features)], labels), one_column)


ALPHAS = (1.0, 3.0)
COLUMNS = (3, 5)  # one hard negative, three


def _gathered_loss_worker(rank: int, port: int, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.distributed.init_process_group("gloo", rank=rank, world_size=2)
    try:
        for alpha in ALPHAS:
            for columns in COLUMNS:
                full = embeddings(batch=8, columns=columns)
                local = [e[rank * 4 : (rank + 1) * 4].clone().requires_grad_() for e in full]
                loss = SimCSELoss(model=None, hard_negative_weight=alpha, gather_across_devices=True)
                value = loss.compute_loss_from_embeddings(local, torch.zeros(4))
                value.backward()
                # numpy, not tensors: a tensor is sent as a shared-memory handle that dies with this
                # process, which may exit before the parent reads the queue
                queue.put((alpha, columns, rank, value.item(), [t.grad.numpy().copy() for t in local]))
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_negatives_gathered_across_two_processes() -> None:
    """Two gloo processes with 4 rows each give the loss and gradients of one process with all 8 rows,
    including the hard-negative weight, whose column depends on the process's offset in the gathered batch,
    with one hard negative per anchor and with three."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = torch.multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [context.Process(target=_gathered_loss_worker, args=(r, port, queue)) for r in range(2)]
    for p in processes:
        p.start()
    received = (queue.get(timeout=120) for _ in range(2 * len(ALPHAS) * len(COLUMNS)))
    results = {(a, c, r): (value, [torch.from_numpy(g) for g in grads]) for a, c, r, value, grads in received}
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    for alpha in ALPHAS:
        for columns in COLUMNS:
            full = [e.clone().requires_grad_() for e in embeddings(batch=8, columns=columns)]
            expected = SimCSELoss(model=None, hard_negative_weight=alpha).compute_loss_from_embeddings(
                full, torch.zeros(8)
            )
            expected.backward()
            (value0, grads0), (value1, grads1) = results[alpha, columns, 0], results[alpha, columns, 1]
            assert (value0 + value1) / 2 == pytest.approx(expected.item(), rel=1e-5)
            # Each process's loss is the mean over its 4 rows, and gathering sends gradients back to the
            # rows' owner (summed over processes): the rows' gradients are those of L0 + L1 = 2 × the
            # full-batch loss.
            for column in range(columns):
                torch.testing.assert_close(torch.cat([grads0[column], grads1[column]]), 2 * full[column].grad)
