"""`lwap encode --backend openvino` and `lwap.openvino_backbone`: same embeddings as the torch backbone."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import SENTENCES

from lwap import build_model, load_model
from lwap.cli import main
from lwap.encoding import encode
from lwap.errors import InputError
from lwap.openvino_backbone import OpenVINOBackbone, use_openvino

LONG = ["word " * 200]  # past every length the graph was converted with: the shapes are dynamic


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


LWAP_VARIANTS = {  # LWAP's query and output variants: the head stays in torch, on the graph's hidden states
    "lwap-meanq": {"lwap_queries": "mean"},
    "lwap-latent-attention": {"lwap_queries": "latent", "lwap_output": "attention"},
}


@pytest.mark.parametrize(
    "pooling",
    [
        "lwap",
        "mean",
        pytest.param("weighted", marks=pytest.mark.slow),
        pytest.param("cls", marks=pytest.mark.slow),
        *LWAP_VARIANTS,
    ],
)
def test_openvino_matches_torch_fp32(tiny_bert, pooling) -> None:
    options = LWAP_VARIANTS.get(pooling, {})
    model = build_model(str(tiny_bert), "lwap" if options else pooling, **options).eval()
    sentences = SENTENCES + LONG
    reference = encode(model, sentences)
    assert use_openvino(model, "fp32") > 0
    assert isinstance(model[0].auto_model, OpenVINOBackbone)
    np.testing.assert_allclose(encode(model, sentences), reference, atol=2e-5)
    # a batch size that splits the inputs differently: other shapes through the same graph
    np.testing.assert_allclose(encode(model, sentences, batch_size=2), reference, atol=2e-5)


@pytest.mark.slow
def test_openvino_bf16_close_to_fp32(tiny_bert) -> None:
    model = build_model(str(tiny_bert), "lwap").eval()
    reference = encode(model, SENTENCES)
    use_openvino(model, "bf16")
    assert cosines(encode(model, SENTENCES, precision="bf16"), reference).min() > 0.99


def test_encode_cli_openvino(tiny_bert, tmp_path, capsys) -> None:
    folder = tmp_path / "lwap-tiny"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    text = tmp_path / "in.txt"
    text.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    out = tmp_path / "out.npy"
    args = ["encode", str(folder), "--input", str(text), "--output", str(out), "--no-progress"]
    assert main([*args, "--backend", "openvino"]) == 0
    captured = capsys.readouterr()
    assert "converted to OpenVINO (fp32)" in captured.err
    np.testing.assert_allclose(np.load(out), load_model(folder).encode(SENTENCES), atol=2e-5)
    assert main([*args, "--backend", "openvino", "--device", "cuda"]) == 2
    assert "--backend openvino runs on the CPU" in capsys.readouterr().err


@pytest.mark.slow
def test_openvino_model_refuses_to_save_and_second_conversion(tiny_bert, tmp_path) -> None:
    model = build_model(str(tiny_bert), "mean").eval()
    use_openvino(model)
    with pytest.raises(InputError, match="cannot be saved"):
        model.save(str(tmp_path / "m"))
    with pytest.raises(InputError, match="already encodes through OpenVINO"):
        use_openvino(model)
    with pytest.raises(InputError, match="precision must be one of"):
        use_openvino(build_model(str(tiny_bert), "mean"), "fp16")


def test_missing_openvino_says_what_to_install(tiny_bert, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino now raises ImportError
    with pytest.raises(InputError, match=r"pip install 'lwap\[openvino\]'"):
        use_openvino(build_model(str(tiny_bert), "mean"))
