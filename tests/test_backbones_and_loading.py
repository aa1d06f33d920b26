"""Backbone resolution offline, safe loading, and the packaged all-MiniLM-L6-v2 end to end."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from conftest import SENTENCES
from sentence_transformers import SentenceTransformer

from lwap import DEFAULT_BACKBONE, build_model, find_lwap, load_model, resolve_backbone
from lwap.errors import BackboneNotFoundError, ModelLoadError


def test_default_backbone_resolves_to_packaged_folder(minilm_path) -> None:
    assert resolve_backbone(DEFAULT_BACKBONE) == str(minilm_path)
    assert resolve_backbone("all-MiniLM-L6-v2") == str(minilm_path)


def test_missing_backbones_give_one_clear_message(tmp_path) -> None:
    with pytest.raises(BackboneNotFoundError, match="does not exist"):
        resolve_backbone(str(tmp_path / "nope"))
    with pytest.raises(BackboneNotFoundError, match="pass a local model folder"):
        resolve_backbone("some-org/some-model-that-is-not-cached")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(BackboneNotFoundError, match="is a file"):
        resolve_backbone(str(tmp_path / "file.txt"))
    with pytest.raises(BackboneNotFoundError, match=r"no config\.json"):
        resolve_backbone(str(tmp_path))


def test_load_model_refuses_foreign_module_classes(tiny_bert, tmp_path) -> None:
    build_model(str(tiny_bert), "mean").save(str(tmp_path / "m"))
    modules = json.loads((tmp_path / "m" / "modules.json").read_text())
    modules[1]["type"] = "evil_package.Payload"
    (tmp_path / "m" / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelLoadError, match="outside lwap and sentence-transformers"):
        load_model(tmp_path / "m")


def test_load_model_errors(tmp_path) -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_model(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match=r"no modules\.json"):
        load_model(tmp_path / "empty")


def test_lwap_model_loads_with_load_model(tiny_bert, tmp_path) -> None:
    model = build_model(str(tiny_bert), "lwap").eval()
    model.save(str(tmp_path / "m"))
    loaded = load_model(tmp_path / "m")
    assert find_lwap(loaded) is not None
    assert np.array_equal(loaded.encode(SENTENCES), model.encode(SENTENCES))


def test_packaged_minilm_with_lwap_encodes(tmp_path) -> None:
    model = build_model(DEFAULT_BACKBONE, "lwap").eval()
    embeddings = model.encode(SENTENCES)
    assert embeddings.shape == (len(SENTENCES), 384) and np.isfinite(embeddings).all()
    attention = find_lwap(model).last_attention
    assert attention.shape[-1] == 7  # embeddings + 6 transformer layers
    model.save(str(tmp_path / "lwap-minilm"))
    reloaded = SentenceTransformer(str(tmp_path / "lwap-minilm"), trust_remote_code=True)
    assert np.array_equal(reloaded.encode(SENTENCES), embeddings)
    # README's snippet: the folder's own copy of the class, which find_lwap still finds
    head = find_lwap(reloaded)
    assert head is not None and type(head) is not type(find_lwap(model))
    assert torch.equal(head.last_attention, attention)
    assert find_lwap(build_model(DEFAULT_BACKBONE, "mean")) is None


def test_packaged_minilm_with_mean_pooling_equals_the_untouched_model(minilm_path) -> None:
    untouched = SentenceTransformer(str(minilm_path))  # Transformer → mean Pooling → Normalize
    ours = build_model(DEFAULT_BACKBONE, "mean")
    np.testing.assert_allclose(
        ours.encode(SENTENCES, normalize_embeddings=True), untouched.encode(SENTENCES), atol=1e-6
    )


def test_sentence_transformers_folder_as_backbone(tiny_bert, tmp_path) -> None:
    """A saved sentence-transformers folder (modules.json) can be the backbone of a new model."""
    build_model(str(tiny_bert), "mean").save(str(tmp_path / "st"))
    shutil.rmtree(tmp_path / "st" / "1_Pooling")
    model = build_model(str(tmp_path / "st"), "lwap")
    assert model.encode(["one sentence"]).shape == (1, 32)


def test_a_roberta_style_position_table_caps_the_length_at_the_tokens_it_can_number(tmp_path) -> None:
    """RoBERTa-style embeddings (the pre-LayerNorm backbone of benchmarks/backbone/pretrain_mlm.py) number
    positions from padding_idx + 1: a table of 18 holds 17 tokens with [PAD] = 0, and 18 would crash the
    embedding."""
    import torch
    from conftest import tokenizer_folder
    from transformers import AutoTokenizer, RobertaPreLayerNormConfig, RobertaPreLayerNormModel

    from lwap.model import set_max_seq_length

    torch.manual_seed(0)
    config = RobertaPreLayerNormConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=64,
                                       max_position_embeddings=18, pad_token_id=0)  # fmt: skip
    RobertaPreLayerNormModel(config).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(tokenizer_folder()).save_pretrained(tmp_path)
    model = build_model(str(tmp_path), pooling="lwap")
    assert model.max_seq_length == 17
    said: list[str] = []
    assert set_max_seq_length(model, 256, said.append) == 17 and "using 17" in said[0]
    long = " ".join(["word"] * 60)
    assert model.encode([long, "short"]).shape == (2, 32)  # cut to 17 tokens, no index error
