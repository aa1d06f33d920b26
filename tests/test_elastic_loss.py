"""Elastic training (lwap.train.elastic): Matryoshka dimensions and depths, checked against the loss
computed by hand (truncated, renormalised embeddings; truncated models), with and without GradCache;
the two dropout views differ at every depth; bad settings stop with one line before the output folder."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import yaml
from conftest import SENTENCES
from sentence_transformers.base.losses.gradcache import _create_minibatch
from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss

from lwap import build_model
from lwap.cli import main
from lwap.train.cached_loss import CachedSimCSELoss
from lwap.train.config import config_from_dict
from lwap.train.elastic import CachedDepthElasticLoss, DepthElasticLoss, elastic_loss
from lwap.train.losses import SimCSELoss
from lwap.truncate import truncate_model

BATCH, MINI = 10, 4  # mini-batches of 4, 4, 2
ALPHA = 2.0  # SimCSE's hard-negative weight in the supervised cases


def objective(**keys: object):
    raw = {
        "output": {"dir": "out"},
        "model": {"backbone": "b", "pooling": "lwap"},
        "data": {"train": "x.txt"},
        "objective": {"name": "unsup_simcse", **keys},
    }
    return config_from_dict(raw).objective


def columns(model, supervised: bool) -> list[dict]:
    texts = (SENTENCES * (3 * BATCH))[: 3 * BATCH]
    chunks = [texts[i * BATCH : (i + 1) * BATCH] for i in range(3 if supervised else 1)]
    return [model.preprocess(chunk) for chunk in chunks]


def deterministic(model):
    """Training mode without randomness: no dropout, LWAP's RReLU at a fixed slope."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if isinstance(module, torch.nn.RReLU):
            module.lower = module.upper = 0.2
    return model.train()


def infonce(views: list[torch.Tensor], supervised: bool) -> torch.Tensor:
    """SimCSE's loss by hand: cosine / 0.05 against the batch's positives (and hard negatives, + log α on
    each anchor's own)."""
    anchors = F.normalize(views[0], dim=-1)
    candidates = F.normalize(torch.cat(views[1:]), dim=-1)
    logits = anchors @ candidates.T / 0.05
    if supervised:
        rows = torch.arange(len(anchors))
        logits[rows, len(anchors) + rows] += math.log(ALPHA)
    return F.cross_entropy(logits, torch.arange(len(anchors)))


def simcse(model, supervised: bool) -> SimCSELoss:
    return SimCSELoss(model, hard_negative_weight=ALPHA if supervised else 1.0)


def gradients(model) -> dict[str, torch.Tensor]:
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return grads


def assert_same_gradients(got: dict, expected: dict) -> None:
    """Equal to float32 noise: the loss pads a merged batch of columns, the hand computation does not."""
    assert got.keys() == expected.keys() and got
    for name, grad in expected.items():
        torch.testing.assert_close(
            got[name],
            grad,
            atol=5e-5,
            rtol=1e-3,
            msg=lambda text, n=name: f"{n}: {text}",
        )


DIMS, DIM_WEIGHTS = [32, 16, 4], [1.0, 0.5, 2.0]


@pytest.mark.parametrize("mini_batch", [None, MINI], ids=["one-pass", "gradcache"])
@pytest.mark.parametrize("supervised", [False, True], ids=["unsup", "sup"])
def test_matryoshka_is_the_weighted_sum_of_truncated_renormalised_losses(
    tiny_bert: Path, supervised: bool, mini_batch: int | None
) -> None:
    model = deterministic(build_model(str(tiny_bert), "lwap"))
    features = columns(model, supervised)
    base = simcse(model, supervised)
    loss = elastic_loss(
        objective(matryoshka_dims=DIMS, matryoshka_weights=DIM_WEIGHTS),
        model,
        base if mini_batch is None else CachedSimCSELoss(base, mini_batch),
    )
    assert isinstance(loss, MatryoshkaLoss)  # sentence-transformers' own, around lwap's loss
    value = loss([dict(f) for f in features], torch.zeros(BATCH))
    value.backward()
    got = gradients(model)

    inputs = features * 2 if not supervised else features
    views = [model(dict(f))["sentence_embedding"] for f in inputs]
    expected = sum(
        w * infonce([v[:, :d] for v in views], supervised) for d, w in zip(DIMS, DIM_WEIGHTS, strict=True)
    )
    torch.testing.assert_close(value.detach(), expected.detach(), atol=1e-5, rtol=1e-5)
    expected.backward()
    assert_same_gradients(got, gradients(model))


DEPTHS, DEPTH_WEIGHTS = [2, 5, 4], [0.5, 1.0, 3.0]  # any order; the deepest (5) is the backbone's L


@pytest.mark.parametrize(
    ("pooling", "supervised", "dims"),
    [
        ("lwap", False, None),
        ("lwap", False, [32, 8]),
        ("lwap", True, [32, 8]),
        ("first_last_avg", False, [32, 8]),
        ("mean", True, None),
        ("all_levels_avg", False, None),
    ],
)
def test_depth_loss_is_the_weighted_sum_over_truncated_models(
    tiny_bert: Path, pooling: str, supervised: bool, dims: list[int] | None
) -> None:
    model = deterministic(build_model(str(tiny_bert), pooling))
    features = columns(model, supervised)
    settings = {"depths": DEPTHS, "depth_weights": DEPTH_WEIGHTS}
    if dims:
        settings |= {"matryoshka_dims": dims, "matryoshka_weights": [1.0, 4.0]}
    loss = elastic_loss(objective(**settings), model, simcse(model, supervised))
    assert isinstance(loss, DepthElasticLoss)
    with torch.no_grad():
        value = loss([dict(f) for f in features], torch.zeros(BATCH))
        expected = 0.0
        for depth, weight in zip(DEPTHS, DEPTH_WEIGHTS, strict=True):
            small = deterministic(truncate_model(model, depth))
            views = [
                small(dict(f))["sentence_embedding"] for f in (features * 2 if not supervised else features)
            ]
            for dim, dim_weight in zip(dims or [32], [1.0, 4.0] if dims else [1.0], strict=True):
                expected += weight * dim_weight * infonce([v[:, :dim] for v in views], supervised)
    torch.testing.assert_close(value, expected, atol=1e-5, rtol=1e-5)


def reference(model, loss, features: list[dict], seed: int, depths: list[int]) -> torch.Tensor:
    """The depth loss over embeddings made mini-batch by mini-batch (GradCache's order of random draws),
    back-propagated by ordinary autograd."""
    if len(features) == 1:
        features = [features[0], dict(features[0])]
    torch.manual_seed(seed)
    with loss.plan.reading(model, depths):
        embedded = [
            torch.cat(
                [
                    model(_create_minibatch(column, begin, min(begin + MINI, BATCH)))["sentence_embedding"]
                    for begin in range(0, BATCH, MINI)
                ]
            )
            for column in features
        ]
    value = loss.plan.combine(loss.loss, embedded, None, depths)
    value.backward()
    return value.detach()


@pytest.mark.parametrize("supervised", [False, True], ids=["unsup", "sup"])
def test_gradcache_depth_loss_replays_dropout_and_equals_autograd(tiny_bert: Path, supervised: bool) -> None:
    model = build_model(str(tiny_bert), "lwap", dropout=0.1).train()
    features = columns(model, supervised)
    loss = elastic_loss(
        objective(depths=DEPTHS, depth_weights=DEPTH_WEIGHTS, matryoshka_dims=[32, 8]),
        model,
        CachedSimCSELoss(simcse(model, supervised), MINI),
    )
    assert isinstance(loss, CachedDepthElasticLoss)
    torch.manual_seed(3)
    value = loss([dict(f) for f in features], torch.zeros(BATCH))
    value.backward()
    got = (value.detach(), gradients(model))
    expected = reference(model, loss, [dict(f) for f in features], 3, sorted(DEPTHS))
    torch.testing.assert_close(got[0], expected, atol=1e-5, rtol=0)
    assert_same_gradients(got[1], gradients(model))


def test_gradcache_and_one_pass_give_the_same_depth_gradients(tiny_bert: Path) -> None:
    model = deterministic(build_model(str(tiny_bert), "lwap", lwap_start="native", native_pooling="mean"))
    features = columns(model, supervised=False)
    settings = objective(depths=DEPTHS, matryoshka_dims=[32, 8])
    one = elastic_loss(settings, model, simcse(model, False))([dict(features[0])], torch.zeros(BATCH))
    one.backward()
    expected = gradients(model)
    cached = elastic_loss(settings, model, CachedSimCSELoss(simcse(model, False), MINI))
    value = cached([dict(features[0])], torch.zeros(BATCH))
    value.backward()
    torch.testing.assert_close(value.detach(), one.detach(), atol=1e-5, rtol=1e-5)
    assert_same_gradients(gradients(model), expected)


@pytest.mark.parametrize("mini_batch", [None, MINI], ids=["one-pass", "gradcache"])
@pytest.mark.parametrize("pooling", ["lwap", "mean", "all_levels_avg"])
def test_two_dropout_views_differ_at_every_depth(
    tiny_bert: Path, pooling: str, mini_batch: int | None
) -> None:
    """Unsupervised SimCSE's positive is a second dropout draw at every depth, never the anchor's states
    again (sentence-transformers' AdaptiveLayerLoss: benchmarks/elastic/adaptive_layer_probe.py)."""
    model = build_model(str(tiny_bert), pooling, dropout=0.1).train()
    base = simcse(model, False)
    loss = elastic_loss(
        objective(depths=[1, 2, 3, 4, 5]),
        model,
        base if mini_batch is None else CachedSimCSELoss(base, mini_batch),
    )
    seen: list[list[torch.Tensor]] = []
    combine = loss.plan.combine
    loss.plan.combine = lambda inner, cols, labels, depths: (
        seen.append(cols) or combine(inner, cols, labels, depths)
    )
    features = columns(model, supervised=False)
    loss([dict(features[0])], torch.zeros(BATCH)).backward()
    anchors, positives = seen[0]
    assert anchors.shape == (BATCH, 5, 32)
    for depth in range(5):
        assert (anchors[:, depth] - positives[:, depth]).abs().max() > 1e-3, f"depth {depth + 1}"
    model.eval()  # no dropout: the two views are one (so the difference above is dropout's)
    seen.clear()
    with torch.no_grad():
        loss([dict(features[0])], torch.zeros(BATCH))
    torch.testing.assert_close(seen[0][0], seen[0][1])


def test_depth_sample_draws_the_full_depth_and_n_others(tiny_bert: Path) -> None:
    model = build_model(str(tiny_bert), "mean")
    plan = elastic_loss(objective(depths=[1, 3, 5], depth_sample=1), model, simcse(model, False)).plan
    random.seed(0)
    draws = [tuple(plan.draw()) for _ in range(200)]
    assert set(draws) == {(1, 5), (3, 5)}
    assert plan.weight(5) == 1.0 and plan.weight(1) == plan.weight(3) == 2.0  # same mean as all depths
    random.seed(0)
    assert [tuple(plan.draw()) for _ in range(200)] == draws  # the trainer's seed (and checkpoint) fixes it


def write_config(tmp_path: Path, tiny_bert: Path, **objective_keys: object) -> Path:
    from test_train_run import tiny_config

    path = tiny_config(tmp_path, tiny_bert, training={"max_steps": 2})
    raw = yaml.safe_load(path.read_text())
    raw["objective"].update(objective_keys)
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"matryoshka_weights": [1.0]}, "objective.matryoshka_weights needs objective.matryoshka_dims"),
        (
            {"matryoshka_dims": [32, 8], "matryoshka_weights": [1.0]},
            "one weight per objective.matryoshka_dims",
        ),
        ({"matryoshka_dims": [32, 32]}, "objective.matryoshka_dims lists a value twice"),
        ({"matryoshka_dims": [64, 8]}, "goes past the model's embedding dimension 32"),
        ({"depths": [0, 5]}, "objective.depths must hold values of at least 1"),
        ({"depths": [2, 4]}, "objective.depths must include the backbone's full depth 5"),
        ({"depths": [2, 6]}, "goes past the backbone's 5 layers"),
        ({"depths": [2, 5], "depth_sample": 2}, "objective.depth_sample must be in 1..1"),
        ({"depth_sample": 1}, "objective.depth_sample needs objective.depths"),
        ({"depths": [2, 5], "depth_weights": [1.0, -1.0]}, "objective.depth_weights must all be > 0"),
    ],
)
def test_bad_elastic_settings_stop_before_the_output_folder(
    tmp_path: Path, tiny_bert: Path, keys: dict, message: str, capsys: pytest.CaptureFixture
) -> None:
    path = write_config(tmp_path, tiny_bert, **keys)
    assert main(["train", str(path)]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and "\n" not in error, error
    assert not (tmp_path / "run").exists()


def test_matryoshka_refuses_a_head_dropped_at_inference(tmp_path: Path, tiny_bert: Path) -> None:
    from lwap.errors import ConfigError
    from lwap.train import load_config

    path = write_config(tmp_path, tiny_bert, matryoshka_dims=[32, 8])
    with pytest.raises(ConfigError, match=r"set model\.mlp_at_inference: true"):
        load_config(path, ["model.pooling=cls"])
    load_config(path, ["model.pooling=cls", "model.mlp_at_inference=true"])


@pytest.mark.parametrize(
    ("model_keys", "message"),
    [
        (
            {"lwap_layers": [0, 3, 5]},
            "model.lwap_layers [0, 3, 5] reads level 5, beyond depth 2 (objective.depths): the lwap pooler",
        ),
        (
            {"pooling": "weighted", "weighted_layer_start": 3},
            "model.weighted_layer_start 3 reads level 3, beyond depth 2 (objective.depths): the weighted",
        ),
        ({"lwap_layers": [0, 1, 2]}, None),  # within the shallowest depth
        ({"pooling": "weighted", "weighted_layer_start": 2}, None),
    ],
)
def test_poolers_that_cannot_truncate_are_refused(
    tmp_path: Path, tiny_bert: Path, model_keys: dict, message: str | None
) -> None:
    """The registry's fixed levels (lwap.registry.Pooler.fixed_level) against the shallowest depth."""
    from lwap.errors import ConfigError
    from lwap.train import load_config

    path = write_config(tmp_path, tiny_bert, depths=[2, 5])
    overrides = [f"model.{key}={value}" for key, value in model_keys.items()]
    if message is None:
        load_config(path, overrides)
        return
    with pytest.raises(ConfigError) as error:
        load_config(path, overrides)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_card_shows_the_smaller_uses() -> None:
    from lwap.train.elastic_card import elastic_section

    assert elastic_section(objective(), True) == []
    title, text = elastic_section(objective(depths=[2, 6], matryoshka_dims=[384, 96]), True)
    assert title == "## Smaller and faster"
    assert "trust_remote_code=True, truncate_dim=96)" in text and "--layers 2" in text


@pytest.mark.slow
def test_elastic_training_run_and_its_card(tmp_path: Path, tiny_bert: Path) -> None:
    """`lwap train` with depths, dimensions and GradCache: it trains, and the card shows the smaller uses."""
    from lwap.train import load_config
    from lwap.train.run import train

    path = write_config(tmp_path, tiny_bert, depths=[1, 3, 5], depth_sample=1, matryoshka_dims=[32, 8])
    config = load_config(path, ["training.mini_batch_size=8", "training.max_steps=3"])
    summary = train(config)
    assert summary["steps"] == 3
    card = (tmp_path / "run" / "model" / "README.md").read_text()
    assert "truncate_dim=8" in card and "--layers 1" in card
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["objective"]
    assert saved["depths"] == [1, 3, 5] and saved["matryoshka_dims"] == [32, 8]
