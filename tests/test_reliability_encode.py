"""Messy input to `encode` (library and CLI): every case in docs/RELIABILITY.md's encode rows."""

from __future__ import annotations

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from lwap import build_model, load_model
from lwap.encoding import encode
from lwap.errors import InputError, ModelLoadError


@pytest.fixture(scope="module")
def model(tiny_bert):
    return build_model(str(tiny_bert), "lwap").eval()


def test_empty_list_gives_empty_array_of_model_width(model) -> None:
    out = encode(model, [])
    assert out.shape == (0, 32) and out.dtype == np.float32


@pytest.mark.parametrize("text", ["", "   \t  ", "\n"], ids=["empty", "whitespace", "newline"])
def test_empty_and_whitespace_strings_get_finite_vectors(model, text) -> None:
    out = encode(model, [text, "a real sentence"])
    assert out.shape == (2, 32) and np.isfinite(out).all()


@pytest.mark.parametrize("bad, kind", [(None, "NoneType"), (3.5, "float"), (b"bytes", "bytes")])
def test_non_string_names_index_and_type(model, bad, kind) -> None:
    with pytest.raises(InputError, match=f"sentence 2 is {kind}, expected str"):
        encode(model, ["ok", "fine", bad])


def test_100k_characters_are_truncated_not_an_error(model) -> None:
    long_text = "lorem ipsum dolor " * 5600  # ~100,000 characters, far over 128 positions
    assert len(long_text) > 100_000
    out = encode(model, [long_text])
    truncated = encode(model, [" ".join(long_text.split()[:300])])  # same first 128 tokens
    np.testing.assert_allclose(out, truncated, atol=1e-5)


@pytest.mark.parametrize(
    "text",
    [
        "I love pizza 🍕😀👍🏽",
        "我爱自然语言处理。",
        "שלום עולם مرحبا بالعالم",
        "a\x00b\x07c\x1bd\u200b\ufeffe",
    ],
    ids=["emoji", "cjk", "right-to-left", "control-chars"],
)
def test_unusual_scripts_and_control_characters(model, text) -> None:
    out = encode(model, [text])
    assert out.shape == (1, 32) and np.isfinite(out).all()


def test_duplicates_get_identical_rows(model) -> None:
    out = encode(model, ["same text", "other text", "same text", "same text"])
    assert np.array_equal(out[0], out[2]) and np.array_equal(out[0], out[3])
    assert not np.array_equal(out[0], out[1])


def test_single_string_is_one_sentence(model) -> None:
    assert encode(model, "just one").shape == (1, 32)


def test_lwap_model_without_trust_remote_code_says_to_pass_it(model, tmp_path) -> None:
    model.save(str(tmp_path / "m"))
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        SentenceTransformer(str(tmp_path / "m"))
    assert load_model(tmp_path / "m") is not None  # lwap's loader passes it after checking modules.json


def test_folder_that_is_not_a_model(tmp_path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("hello")
    with pytest.raises(ModelLoadError, match="not a sentence-transformers model folder"):
        load_model(tmp_path / "notes")
