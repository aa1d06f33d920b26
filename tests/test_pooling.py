"""LWAP and the comparison poolers on a tiny random BERT and on hand-made hidden states."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import SENTENCES
from sentence_transformers import SentenceTransformer

from lwap import POOLINGS, LayerwiseAttentionPooling, build_model, find_lwap
from lwap.errors import ConfigError
from lwap.registry import Backbone, build_head


def reference_lwap(
    module: LayerwiseAttentionPooling, layers: list[torch.Tensor], mask: torch.Tensor
) -> torch.Tensor:
    """The method as written in the paper's description, one sentence and one layer at a time; with the
    module's query and output variants (the paper: [CLS] queries, the last [CLS] joined to the output)."""
    act = module.activation
    outputs = []
    for b in range(mask.shape[0]):
        real = mask[b].bool()
        targets = [h[b, real].mean(dim=0) for h in layers]
        if module.queries == "latent":
            q = list(module.latent)
        else:
            sources = [h[b, 0] for h in layers] if module.queries == "cls" else targets
            q = [act(module.query(s)) for s in sources]
        k = [act(module.key(t)) for t in targets]
        v = [act(module.value(t)) for t in targets]
        per_query = []
        for q_i in q:
            scores = torch.stack([q_i @ k_l for k_l in k]) / len(layers)
            weights = torch.softmax(scores, dim=0)
            per_query.append(sum(w * v_l for w, v_l in zip(weights, v, strict=True)))
        pooled = torch.stack(per_query).mean(dim=0)
        if module.output_from == "cls_concat":
            pooled = torch.cat([layers[-1][b, 0], pooled])
        outputs.append(torch.tanh(module.output(pooled)))
    return torch.stack(outputs)


# every query × output variant of the lwap pooler (the paper's: cls × cls_concat)
VARIANTS = [(q, o) for q in ("cls", "mean", "latent") for o in ("cls_concat", "attention")]
OPTION_SETS = [{}, {"lwap_queries": "mean"}, {"lwap_queries": "latent", "lwap_output": "attention"}]


def hand_made_features(batch: int = 3, tokens: int = 6, hidden: int = 8, num_states: int = 5, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    layers = [torch.randn(batch, tokens, hidden, generator=generator) for _ in range(num_states)]
    mask = torch.ones(batch, tokens, dtype=torch.long)
    mask[1, 4:] = 0
    mask[2, 2:] = 0
    return layers, mask


@pytest.mark.parametrize(("queries", "output"), VARIANTS)
def test_lwap_matches_per_sentence_reference(queries: str, output: str) -> None:
    torch.manual_seed(0)
    module = LayerwiseAttentionPooling(8, 5, queries=queries, output_from=output, latent_queries=3).eval()
    if queries == "latent":  # far from their near-zero start, so the queries matter in the comparison
        torch.nn.init.normal_(module.latent)
    layers, mask = hand_made_features()
    got = module({"all_layer_embeddings": tuple(layers), "attention_mask": mask})["sentence_embedding"]
    torch.testing.assert_close(got, reference_lwap(module, layers, mask), rtol=1e-5, atol=1e-6)
    expected_queries = 3 if queries == "latent" else 5
    assert module.last_attention.shape == (3, expected_queries, 5)


def test_variants_differ_from_the_paper_and_default_to_it() -> None:
    """Each option changes what the module computes; left out, the module is the paper's head."""
    layers, mask = hand_made_features()
    features = {"all_layer_embeddings": tuple(layers), "attention_mask": mask}
    outputs = {}
    for queries, output in VARIANTS:
        torch.manual_seed(0)
        module = LayerwiseAttentionPooling(8, 5, queries=queries, output_from=output).eval()
        outputs[queries, output] = module(dict(features))["sentence_embedding"]
    torch.manual_seed(0)
    paper = LayerwiseAttentionPooling(8, 5).eval()
    assert (paper.queries, paper.output_from) == ("cls", "cls_concat")
    torch.testing.assert_close(paper(dict(features))["sentence_embedding"], outputs["cls", "cls_concat"])
    values = list(outputs.values())
    assert all(not torch.allclose(a, b) for i, a in enumerate(values) for b in values[i + 1 :])
    assert not hasattr(LayerwiseAttentionPooling(8, 5, queries="latent"), "query")  # no unused W_q
    assert LayerwiseAttentionPooling(8, 5, output_from="attention").output.in_features == 8  # W_o H→H


def test_latent_queries_start_near_a_uniform_average_of_the_layers(tiny_bert) -> None:
    """Step 0 of `latent`: every query weighs the layers about uniformly, yet the k queries differ (equal
    queries would get equal gradients and stay one)."""
    for scale in ("num_layers", "sqrt_hidden"):
        torch.manual_seed(0)
        model = build_model(str(tiny_bert), "lwap", lwap_queries="latent", score_scale=scale).eval()
        head = find_lwap(model)
        model.encode(SENTENCES)
        weights = head.last_attention
        assert weights.shape == (len(SENTENCES), 4, 6)  # 4 queries (the default) over 5 layers + embeddings
        torch.testing.assert_close(weights, torch.full_like(weights, 1 / 6), atol=0.01, rtol=0)
        assert torch.cdist(head.latent, head.latent).fill_diagonal_(1.0).min() > 0.01
    module = LayerwiseAttentionPooling(8, 5, queries="latent", latent_queries=2).eval()
    layers, mask = hand_made_features()
    module({"all_layer_embeddings": tuple(layers), "attention_mask": mask})
    weights = module.last_attention
    assert weights.shape == (3, 2, 5)
    torch.testing.assert_close(weights, torch.full_like(weights, 1 / 5), atol=0.01, rtol=0)


def test_masked_mean_ignores_padding() -> None:
    torch.manual_seed(0)
    module = LayerwiseAttentionPooling(hidden_size=8, num_hidden_states=5).eval()
    layers, mask = hand_made_features()
    before = module({"all_layer_embeddings": tuple(layers), "attention_mask": mask})["sentence_embedding"]
    garbage = [h.clone() for h in layers]
    for h in garbage:
        h[mask == 0] = 1e4  # padded positions carry huge values that would dominate an unmasked mean
    after = module({"all_layer_embeddings": tuple(garbage), "attention_mask": mask})["sentence_embedding"]
    torch.testing.assert_close(before, after)


def test_attention_weights_are_distributions_over_layers() -> None:
    module = LayerwiseAttentionPooling(hidden_size=8, num_hidden_states=5).eval()
    layers, mask = hand_made_features()
    module({"all_layer_embeddings": tuple(layers), "attention_mask": mask})
    weights = module.last_attention
    assert weights.shape == (3, 5, 5)
    assert bool((weights >= 0).all())
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 5))


@pytest.mark.parametrize(("queries", "output"), VARIANTS)
def test_layer_subset_and_sqrt_scale(queries: str, output: str) -> None:
    torch.manual_seed(0)
    module = LayerwiseAttentionPooling(
        8, 5, layers=[2, 3, 4], score_scale="sqrt_hidden", queries=queries, output_from=output
    ).eval()
    layers, mask = hand_made_features()
    out = module({"all_layer_embeddings": tuple(layers), "attention_mask": mask})["sentence_embedding"]
    assert out.shape == (3, 8)
    assert module.last_attention.shape == (3, 4 if queries == "latent" else 3, 3)
    # only the chosen layers count (the last [CLS] is the backbone's last layer, which is layer 4 here)
    changed = [h.clone() for h in layers]
    changed[0].normal_(), changed[1].normal_()
    again = module({"all_layer_embeddings": tuple(changed), "attention_mask": mask})["sentence_embedding"]
    torch.testing.assert_close(again, out)
    scaled = LayerwiseAttentionPooling(8, 5, layers=[2, 3, 4], queries=queries, output_from=output).eval()
    scaled.load_state_dict(module.state_dict())
    by_layers = scaled({"all_layer_embeddings": tuple(layers), "attention_mask": mask})["sentence_embedding"]
    assert not torch.allclose(by_layers, out)  # /3 and /√8 weigh the scores differently
    with pytest.raises(ValueError, match="layers"):
        LayerwiseAttentionPooling(8, 5, layers=[5])
    with pytest.raises(ValueError, match="score_scale"):
        LayerwiseAttentionPooling(8, 5, score_scale="bogus")
    with pytest.raises(ValueError, match="queries must be one of"):
        LayerwiseAttentionPooling(8, 5, queries="bogus")
    with pytest.raises(ValueError, match="output_from must be one of"):
        LayerwiseAttentionPooling(8, 5, output_from="bogus")
    with pytest.raises(ValueError, match="latent_queries must be at least 1"):
        LayerwiseAttentionPooling(8, 5, queries="latent", latent_queries=0)


def test_weighted_pooler_equals_seed_formula() -> None:
    """Seed: learned scalar weight per layer from layer 4, weighted mean of the layers, then [CLS]."""
    weighted, cls = build_head("weighted", Backbone(hidden_size=8, num_layers=6), weighted_layer_start=4)
    layers, mask = hand_made_features(num_states=7)
    with torch.no_grad():
        weighted.layer_weights.copy_(torch.tensor([0.5, 2.0, 1.5]))
    features = cls(weighted({"all_layer_embeddings": tuple(layers), "attention_mask": mask}))
    w = [0.5, 2.0, 1.5]
    expected = sum(w_l * layers[4 + i][:, 0] for i, w_l in enumerate(w)) / sum(w)
    torch.testing.assert_close(features["sentence_embedding"], expected)


def test_first_last_avg_uses_first_transformer_layer_not_embeddings() -> None:
    layer_mean, pooling = build_head("first_last_avg", Backbone(hidden_size=8, num_layers=4))
    assert layer_mean.layers == [1, 4]
    layers, mask = hand_made_features(num_states=5)
    out = pooling(layer_mean({"all_layer_embeddings": tuple(layers), "attention_mask": mask}))[
        "sentence_embedding"
    ]
    tokens = (layers[1] + layers[4]) / 2
    m = mask.unsqueeze(-1).float()
    torch.testing.assert_close(out, (tokens * m).sum(1) / m.sum(1))
    assert build_head("last2_avg", Backbone(hidden_size=8, num_layers=4))[0].layers == [3, 4]


def test_all_levels_avg_is_the_equal_weight_mean_of_every_level_lwap_reads() -> None:
    layer_mean, pooling = build_head("all_levels_avg", Backbone(hidden_size=8, num_layers=4))
    assert layer_mean.layers == [0, 1, 2, 3, 4]  # the embedding output too, as LWAP's default levels
    layers, mask = hand_made_features(num_states=5)
    out = pooling(layer_mean({"all_layer_embeddings": tuple(layers), "attention_mask": mask}))
    m = mask.unsqueeze(-1).float()
    per_level = [(h * m).sum(1) / m.sum(1) for h in layers]  # t_l, LWAP's keys and values before W_k, W_v
    torch.testing.assert_close(out["sentence_embedding"], torch.stack(per_level).mean(0))


def test_max_is_the_largest_value_of_each_dimension_over_the_real_tokens() -> None:
    (pooling,) = build_head("max", Backbone(hidden_size=8, num_layers=4))
    layers, mask = hand_made_features(num_states=5)
    tokens = layers[-1].clone()
    tokens[mask == 0] = 1e6  # padding never wins
    out = pooling({"token_embeddings": tokens, "attention_mask": mask})["sentence_embedding"]
    for b in range(len(mask)):
        torch.testing.assert_close(out[b], tokens[b, mask[b].bool()].max(dim=0).values)


@pytest.mark.parametrize("lwap_layers", [None, [0, 2, 4]])
def test_level_norm_all_layer_norms_every_level_lwap_reads(lwap_layers) -> None:
    from lwap.hidden_state_norm import NormalizeHiddenStates

    backbone = Backbone(hidden_size=8, num_layers=4)
    norm, head = build_head("lwap", backbone, lwap_level_norm="all", lwap_layers=lwap_layers)
    assert isinstance(norm, NormalizeHiddenStates)
    assert norm.layers == (lwap_layers or [0, 1, 2, 3, 4])
    assert len(build_head("lwap", backbone)) == 1  # auto: the paper's head alone
    layers, mask = hand_made_features(num_states=5)
    scaled = [h * (10.0 if i == 0 else 1.0) + 3.0 for i, h in enumerate(layers)]  # one level 10× the rest
    features = norm({"all_layer_embeddings": tuple(scaled), "attention_mask": mask})
    for i in norm.layers:
        level = features["all_layer_embeddings"][i]
        torch.testing.assert_close(level.mean(-1), torch.zeros(level.shape[:-1]), atol=1e-5, rtol=0)
        torch.testing.assert_close(
            level.var(-1, unbiased=False), torch.ones(level.shape[:-1]), atol=1e-3, rtol=0
        )
    out = head(features)["sentence_embedding"]
    assert out.shape == (3, 8) and torch.isfinite(out).all()


@pytest.mark.parametrize(
    ("pooling", "options"),
    [(pooling, {}) for pooling in POOLINGS] + [("lwap", options) for options in OPTION_SETS[1:]],
    ids=[*POOLINGS, "lwap-meanq", "lwap-latent-attention"],
)
def test_shape_padding_invariance_and_exact_reload(pooling: str, options: dict, tiny_bert, tmp_path) -> None:
    model = build_model(str(tiny_bert), pooling, **options).eval()
    embeddings = model.encode(SENTENCES, convert_to_numpy=True)
    assert embeddings.shape == (len(SENTENCES), 32)
    alone = model.encode(["Hi"], convert_to_numpy=True)
    np.testing.assert_allclose(alone[0], embeddings[2], atol=1e-5)  # batched with longer sentences
    model.save(str(tmp_path / "saved"))
    reloaded = SentenceTransformer(str(tmp_path / "saved"), trust_remote_code=True)
    assert np.array_equal(reloaded.encode(SENTENCES, convert_to_numpy=True), embeddings)
    assert not list((tmp_path / "saved").rglob("*.bin")) and not list((tmp_path / "saved").rglob("*.pt"))


@pytest.mark.parametrize("options", OPTION_SETS, ids=["paper", "meanq", "latent-attention"])
def test_gradients_reach_pooling_and_backbone(tiny_bert, options: dict) -> None:
    model = build_model(str(tiny_bert), "lwap", **options).train()
    features = model.preprocess(SENTENCES)
    model(features)["sentence_embedding"].pow(2).sum().backward()
    lwap = find_lwap(model)
    for name, parameter in lwap.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    backbone_grads = [p.grad for p in model[0].parameters() if p.grad is not None]
    assert backbone_grads and sum(float(g.abs().sum()) for g in backbone_grads) > 0


def test_cls_mlp_is_used_in_training_only(tiny_bert) -> None:
    model = build_model(str(tiny_bert), "cls")
    features = model.preprocess(SENTENCES)
    model.eval()
    with torch.no_grad():
        evaluated = model(dict(features))["sentence_embedding"]
        token = model[0](dict(features))["token_embeddings"][:, 0]
    torch.testing.assert_close(evaluated, token)
    mlp = model[2].train()  # only the head in training mode: no dropout noise in the backbone
    with torch.no_grad():
        trained = model(dict(features))["sentence_embedding"]
    torch.testing.assert_close(trained, torch.tanh(mlp.dense(token)))


def test_unknown_pooling_lists_valid_ones(tiny_bert) -> None:
    with pytest.raises(ConfigError, match="pooling: unknown value 'sum'; valid: lwap, weighted, cls"):
        build_model(str(tiny_bert), "sum")
    with pytest.raises(ConfigError, match="weighted_layer_start"):
        build_model(str(tiny_bert), "weighted", weighted_layer_start=9)
