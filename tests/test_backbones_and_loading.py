"""Backbone resolution offline, safe loading, and the packaged all-MiniLM-L6-v2 end to end."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
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
