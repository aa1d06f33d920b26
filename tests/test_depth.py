"""A model at depth k (lwap.depth, lwap.truncate): a k-layer model computes what reading levels 0..k of
one full-depth forward gives; the truncated folder has no other layers and loads in plain
sentence-transformers; poolers that cannot be read at k are refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import SENTENCES
from safetensors import safe_open

from lwap import build_model, load_model, registry
from lwap.cli import main
from lwap.depth import DEPTH_RULES, DepthReader, check_depth
from lwap.errors import ConfigError
from lwap.truncate import save_truncated, truncate_model

DEPTHS = [1, 2, 3, 4]  # the tiny backbones have 4 layers


@pytest.fixture(scope="module")
def bert4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import make_tiny_bert

    return make_tiny_bert(tmp_path_factory.mktemp("bert4"), num_layers=4)


@pytest.fixture(scope="module")
def prenorm4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import make_tiny_prenorm

    return make_tiny_prenorm(tmp_path_factory.mktemp("prenorm4"))


POOLERS = {
    "lwap": {},
    "lwap-native": {"lwap_start": "native", "native_pooling": "mean"},
    "lwap-latent": {"lwap_queries": "latent", "lwap_output": "attention"},
    "lwap-levelnorm": {"lwap_level_norm": "all"},
    "lwap-sqrt": {"score_scale": "sqrt_hidden"},
    "mean": {},
    "max": {},
    "cls": {},
    "first_last_avg": {},
    "last2_avg": {},
    "all_levels_avg": {},
    "weighted": {"weighted_layer_start": 1},
}


def built(backbone: Path, row: str) -> torch.nn.Module:
    return build_model(str(backbone), row.split("-")[0], **POOLERS[row]).eval()


# a pre-LayerNorm backbone: the poolers that read several levels (they get its level norm) and mean
PRENORM_ROWS = ["lwap", "lwap-levelnorm", "mean", "first_last_avg", "all_levels_avg", "weighted"]


@pytest.mark.parametrize(
    ("backbone", "row"), [("bert4", row) for row in POOLERS] + [("prenorm4", row) for row in PRENORM_ROWS]
)
def test_truncated_model_equals_levels_0_to_k_of_the_full_forward(
    row: str, backbone: str, request: pytest.FixtureRequest
) -> None:
    model = built(request.getfixturevalue(backbone), row)
    features = model.preprocess(SENTENCES)
    with torch.no_grad():
        read = DepthReader(model, DEPTHS).embed(dict(features), DEPTHS)["sentence_embedding"]
        assert torch.equal(read[:, -1], model(dict(features))["sentence_embedding"])  # depth L: the model
        for index, depth in enumerate(DEPTHS):
            small = truncate_model(model, depth).eval()
            assert small[0].auto_model.config.num_hidden_layers == depth
            assert len(small[0].auto_model.encoder.layer) == depth
            got = small(dict(features))["sentence_embedding"]
            torch.testing.assert_close(got, read[:, index], atol=1e-6, rtol=0)
    assert (read[:, 0] - read[:, -1]).abs().max() > 1e-3  # depth 1 is another vector: not trivially equal


def test_prenorm_depth_k_applies_the_final_layer_norm_to_layer_k(prenorm4: Path) -> None:
    """Without the final LayerNorm on layer k the mean of layer k is not what a k-layer copy gives."""
    model = build_model(str(prenorm4), "mean").eval()
    features = model.preprocess(SENTENCES)
    with torch.no_grad():
        full = model[0](dict(model.preprocess(SENTENCES)))["token_embeddings"]
        model[0].auto_model.config.output_hidden_states = True
        raw = model[0](dict(features))["all_layer_embeddings"][2]
        small = truncate_model(model, 2).eval()
        cut = small[0](dict(model.preprocess(SENTENCES)))["token_embeddings"]
    final = model[0].auto_model.LayerNorm
    torch.testing.assert_close(cut, final(raw), atol=1e-6, rtol=0)
    assert (cut - raw).abs().max() > 1e-2 and (cut - full).abs().max() > 1e-3


def test_native_start_is_the_backbones_own_pooling_of_layer_k_at_every_depth(bert4: Path) -> None:
    """At step 0 the correction is zero, so depth k embeds as mean pooling of layer k."""
    model = build_model(str(bert4), "lwap", lwap_start="native", native_pooling="mean").eval()
    mean = build_model(str(bert4), "mean").eval()
    features = model.preprocess(SENTENCES)
    with torch.no_grad():
        read = DepthReader(model, DEPTHS).embed(dict(features), DEPTHS)["sentence_embedding"]
        for index, depth in enumerate(DEPTHS):
            own = truncate_model(mean, depth)(dict(features))["sentence_embedding"]
            torch.testing.assert_close(read[:, index], own, atol=1e-6, rtol=0)


def test_lwap_at_depth_k_is_the_full_attention_over_the_levels_left(bert4: Path) -> None:
    """The score scale stays 1/(L+1): at depth k, query i's weights are its full-depth weights on levels
    0..k, renormalised (lwap.depth.lwap_query_scale)."""
    model = build_model(str(bert4), "lwap").eval()
    head = model[-1]
    features = model.preprocess(SENTENCES)
    with torch.no_grad():
        model(dict(features))
        full = head.last_attention  # (batch, L+1 queries, L+1 levels)
        for depth in (1, 2, 3):
            small = truncate_model(model, depth).eval()
            small(dict(features))
            kept = full[:, : depth + 1, : depth + 1]
            expected = kept / kept.sum(-1, keepdim=True)
            torch.testing.assert_close(small[-1].last_attention, expected, atol=1e-5, rtol=1e-4)


def test_truncated_folder_has_no_other_layers_and_loads_in_sentence_transformers(
    bert4: Path, tmp_path: Path
) -> None:
    from sentence_transformers import SentenceTransformer

    model = build_model(str(bert4), "lwap", lwap_start="native", native_pooling="mean").eval()
    folder = save_truncated(model, 2, tmp_path / "small", source="the test model", dims=16)
    config = json.loads((folder / "config.json").read_text())
    assert config["num_hidden_layers"] == 2
    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        layers = {key.split(".")[2] for key in weights.keys() if key.startswith("encoder.layer.")}  # noqa: SIM118
    assert layers == {"0", "1"}
    assert json.loads((folder / "config_sentence_transformers.json").read_text())["truncate_dim"] == 16
    plain = SentenceTransformer(str(folder), trust_remote_code=True)  # the folder's own module files
    assert all(
        type(m).__module__.startswith(("sentence_transformers", "transformers_modules")) for m in plain
    )
    mine = load_model(folder)
    expected = truncate_model(model, 2).encode(SENTENCES, normalize_embeddings=True)[:, :16]
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    for loaded in (plain, mine):
        got = loaded.encode(SENTENCES, normalize_embeddings=True)
        assert got.shape == (len(SENTENCES), 16)
        np.testing.assert_allclose(got, expected, atol=1e-5)
    with pytest.raises(Exception, match="already exists"):
        save_truncated(model, 2, folder)


@pytest.mark.parametrize(
    ("pooling", "options", "depth", "message"),
    [
        ("lwap", {"lwap_layers": [0, 2, 4]}, 3, "lwap_layers \\[0, 2, 4\\] names levels beyond depth 3"),
        ("weighted", {"weighted_layer_start": 3}, 2, "weighted_layer_start 3 is beyond depth 2"),
        ("mean", {}, 5, "depth 5 is outside 1..4"),
        ("mean", {}, 0, "depth 0 is outside 1..4"),
    ],
)
def test_poolers_that_cannot_be_read_at_depth_k_are_refused(
    bert4: Path, pooling: str, options: dict, depth: int, message: str
) -> None:
    model = build_model(str(bert4), pooling, **options)
    with pytest.raises(ConfigError, match=message) as error:
        check_depth(model, depth)
    assert "\n" not in str(error.value)
    check_depth(model, 4)  # the full depth always reads


def test_a_folder_loaded_by_plain_sentence_transformers_is_sent_to_load_model(
    bert4: Path, tmp_path: Path
) -> None:
    """Its module is the folder's own copy of lwap's class: named as such, with the load that truncates."""
    from sentence_transformers import SentenceTransformer

    from lwap.layerwise_attention import LayerwiseAttentionPooling
    from lwap.portable import shipped_class_of

    build_model(str(bert4), "lwap").save(str(tmp_path / "m"))
    plain = SentenceTransformer(str(tmp_path / "m"), trust_remote_code=True)
    assert shipped_class_of(type(plain[1])) is LayerwiseAttentionPooling is not type(plain[1])
    assert shipped_class_of(LayerwiseAttentionPooling) is None  # lwap's own class is no copy
    with pytest.raises(
        ConfigError, match=r"folder's own copy of lwap's class .* load it with lwap\.load_model"
    ):
        truncate_model(plain, 2)
    assert truncate_model(load_model(tmp_path / "m"), 2)[-1].num_hidden_states == 3  # levels 0..2


def test_every_module_class_a_pooler_places_has_a_depth_rule() -> None:
    for path in registry.MODULES:
        assert any(cls in DEPTH_RULES for cls in registry.module_class(path).__mro__), path


@pytest.mark.parametrize(
    ("pooling", "options"),
    [(name, {}) for name in registry.POOLINGS]
    + [("lwap", {"lwap_layers": [0, 2, 3]}), ("weighted", {"weighted_layer_start": 2})],
)
def test_the_registrys_fixed_level_is_the_least_depth_the_built_pooler_reads(
    bert4: Path, pooling: str, options: dict
) -> None:
    """`objective.depths` is checked from the registry before torch loads; lwap.depth checks the modules."""
    fixed = registry.POOLERS[pooling].deepest_fixed_level(options)
    least = 1 if fixed is None else max(fixed[1], 1)
    model = build_model(str(bert4), pooling, **options)
    check_depth(model, least)
    if least > 1:
        with pytest.raises(ConfigError):
            check_depth(model, least - 1)


def test_explicit_lwap_layers_within_the_depth_are_kept(bert4: Path) -> None:
    model = build_model(str(bert4), "lwap", lwap_layers=[0, 1, 2]).eval()
    assert truncate_model(model, 2)[-1].layers == [0, 1, 2]


def test_encode_with_layers_and_dims(bert4: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model = build_model(str(bert4), "all_levels_avg").eval()
    model.save(str(tmp_path / "model"))
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    out = tmp_path / "out.npy"
    command = ["encode", str(tmp_path / "model"), "--input", str(tmp_path / "in.txt"), "--output", str(out)]
    assert main([*command, "--layers", "2", "--dims", "8", "--normalize", "--no-progress"]) == 0
    got = np.load(out)
    expected = truncate_model(model, 2).encode(SENTENCES)[:, :8]
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    capsys.readouterr()
    assert main([*command, "--overwrite", "--layers", "7"]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .endswith("depth 7 is outside 1..4, the layers of this model's backbone")
    )
    assert main([*command, "--overwrite", "--dims", "99"]) == 2
    assert "dims must be in 1..32" in capsys.readouterr().err


def test_truncate_command(bert4: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    build_model(str(bert4), "first_last_avg").save(str(tmp_path / "model"))
    assert main(["truncate", str(tmp_path / "model"), str(tmp_path / "small"), "--layers", "3"]) == 0
    small = load_model(tmp_path / "small")
    assert small[0].auto_model.config.num_hidden_layers == 3 and small[1].layers == [1, 3]
    assert (tmp_path / "small" / "TRUNCATED.md").is_file()
    capsys.readouterr()
    assert main(["truncate", str(tmp_path / "model"), str(tmp_path / "small"), "--layers", "2"]) == 2
    assert "already exists" in capsys.readouterr().err
