"""`training.mini_batch_size` (GradCache): the loss and every gradient equal the full batch's.

Two references. With dropout off (and no other randomness: mean pooling), the plain `SimCSELoss` over
the whole batch in one forward pass. With dropout on (and LWAP's RReLU slopes), the same masks are
needed on both sides: the reference embeds the same mini-batches in the same order from the same seed,
with ordinary autograd; GradCache must then replay those masks in its backward pass (a wrong replay
gives different gradients). Both regimes: unsupervised (one column, two views) and supervised (anchor,
positive, one or three hard negatives; with SimCSE's α ≠ 1).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import SENTENCES
from sentence_transformers.base.losses.gradcache import _create_minibatch

from lwap import build_model
from lwap.train.cached_loss import CachedSimCSELoss
from lwap.train.losses import SimCSELoss

BATCH, MINI = 12, 5  # mini-batches of 5, 5, 2: uneven on purpose


def columns(model, supervised: bool, negatives: int = 1) -> list[dict]:
    """One column (unsupervised) or 2 + `negatives` (supervised) of tokenized sentences, on the model's
    device."""
    count = 2 + negatives if supervised else 1
    texts = (SENTENCES * (count * BATCH))[: count * BATCH]
    chunks = [texts[i * BATCH : (i + 1) * BATCH] for i in range(count)]
    tokenized = [model.preprocess(chunk) for chunk in chunks]
    return [{k: v.to(model.device) if torch.is_tensor(v) else v for k, v in t.items()} for t in tokenized]


def gradients(model) -> dict[str, torch.Tensor]:
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return grads


def mini_batch_reference(model, loss: SimCSELoss, features: list[dict], seed: int) -> torch.Tensor:
    """Full-batch loss over embeddings made mini-batch by mini-batch, column by column (GradCache's
    order of random draws), back-propagated by ordinary autograd."""
    if len(features) == 1:
        features = [features[0], dict(features[0])]
    torch.manual_seed(seed)
    embeddings = [
        torch.cat(
            [
                model(_create_minibatch(column, begin, min(begin + MINI, BATCH)))["sentence_embedding"]
                for begin in range(0, BATCH, MINI)
            ]
        )
        for column in features
    ]
    value = loss.compute_loss_from_embeddings(embeddings, None)
    value.backward()
    return value.detach()


def assert_same(cached: tuple[torch.Tensor, dict], reference: tuple[torch.Tensor, dict]) -> None:
    torch.testing.assert_close(cached[0], reference[0], atol=1e-5, rtol=0)
    assert cached[1].keys() == reference[1].keys() and cached[1]
    for name, grad in reference[1].items():
        torch.testing.assert_close(cached[1][name], grad, atol=1e-5, rtol=1e-4, msg=name)


# LWAP's query and output variants draw RReLU slopes too (for K and V only, with latent queries)
VARIANTS = {
    "lwap-meanq": {"lwap_queries": "mean"},
    "lwap-latent-attention": {"lwap_queries": "latent", "lwap_output": "attention"},
}


SUPERVISION = [(False, 0), (True, 1), (True, 3)]  # (supervised, hard negatives per anchor)
SUPERVISION_IDS = ["unsup", "sup", "sup-3-negatives"]


@pytest.mark.parametrize(("supervised", "negatives"), SUPERVISION, ids=SUPERVISION_IDS)
@pytest.mark.parametrize("pooling", ["lwap", "cls", *VARIANTS])
def test_mini_batches_equal_full_batch_with_dropout(
    tiny_bert: Path, supervised: bool, negatives: int, pooling: str, device: str = "cpu"
) -> None:
    """(tests/test_gpu.py runs this on CUDA too.)"""
    options = VARIANTS.get(pooling, {})
    model = build_model(
        str(tiny_bert), "lwap" if options else pooling, max_seq_length=16, device=device, **options
    ).train()  # dropout 0.1
    features = columns(model, supervised, negatives)
    loss = SimCSELoss(model, hard_negative_weight=2.0 if supervised else 1.0)
    cached = CachedSimCSELoss(loss, MINI)

    torch.manual_seed(3)
    value = cached([dict(f) for f in features], torch.zeros(BATCH, device=model.device))
    value.backward()
    got = (value.detach(), gradients(model))
    expected = (mini_batch_reference(model, loss, [dict(f) for f in features], seed=3), gradients(model))
    assert_same(got, expected)

    # a different seed draws other masks: the comparison above is not trivially equal
    torch.manual_seed(4)
    other = cached([dict(f) for f in features], torch.zeros(BATCH, device=model.device))
    other.backward()
    model.zero_grad(set_to_none=True)
    assert abs(other.item() - got[0].item()) > 1e-4


@pytest.mark.parametrize(("supervised", "negatives"), SUPERVISION, ids=SUPERVISION_IDS)
def test_mini_batches_equal_one_forward_without_dropout(
    tiny_bert: Path, supervised: bool, negatives: int, device: str = "cpu"
) -> None:
    # mean pooling: LWAP's RReLU draws random slopes too
    model = build_model(str(tiny_bert), "mean", max_seq_length=16, device=device).train()
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0  # BERT's attention dropout reads the same module's p
    features = columns(model, supervised, negatives)
    loss = SimCSELoss(model, hard_negative_weight=2.0 if supervised else 1.0)

    labels = torch.zeros(BATCH, device=model.device)
    full = loss([dict(f) for f in features], labels)  # one merged forward of the whole batch
    full.backward()
    expected = (full.detach(), gradients(model))
    cached = CachedSimCSELoss(loss, MINI)([dict(f) for f in features], labels)
    cached.backward()
    assert_same((cached.detach(), gradients(model)), expected)


def test_bf16_autocast_is_replayed_in_the_backward_pass(tiny_bert: Path) -> None:
    """The trainer's autocast covers the forward only; the cached loss re-enters it for the replay, so
    the replayed embeddings are the cached ones (else the gradients belong to other embeddings)."""
    model = build_model(str(tiny_bert), "mean", max_seq_length=16).train()
    features = columns(model, supervised=False)
    loss = SimCSELoss(model)
    seen: list[bool] = []
    model[1].register_forward_hook(lambda *_: seen.append(torch.is_autocast_enabled("cpu")))
    torch.manual_seed(0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        value = CachedSimCSELoss(loss, MINI)([dict(features[0])], torch.zeros(BATCH))
    value.backward()
    assert len(seen) == 2 * 2 * 3 and all(seen)  # 2 views × (cached + replay) × 3 mini-batches


def test_training_with_mini_batches(tmp_path: Path, tiny_bert: Path) -> None:
    """`training.mini_batch_size` through `lwap train`'s trainer: the cached loss is used and trains."""
    from test_train_run import tiny_config

    from lwap.train import load_config
    from lwap.train.trainer import build_trainer, training_inputs

    config = load_config(
        tiny_config(tmp_path, tiny_bert, training={"max_steps": 3, "mini_batch_size": 6, "precision": "fp32"})
    )
    out = tmp_path / "out"
    built = build_trainer(config, out, inputs=training_inputs(config, out, checkpoints=False))
    assert isinstance(built.loss, CachedSimCSELoss) and built.loss.mini_batch_size == 6
    before = [p.detach().clone() for p in built.model.parameters() if p.requires_grad]
    built.trainer.train()
    after = [p.detach() for p in built.model.parameters() if p.requires_grad]
    assert all(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
