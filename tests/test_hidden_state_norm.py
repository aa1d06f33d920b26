"""A pre-LayerNorm backbone's raw intermediate hidden states are layer-normed before a pooler that reads
several layers (lwap.hidden_state_norm): computed by hand from the backbone's own hidden states, absent
where nothing reads them or the backbone normalises every layer itself, and kept through save and load."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import tokenizer_folder
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer, BertConfig, BertModel

from lwap import build_model, load_model
from lwap.hidden_state_norm import NormalizeHiddenStates

SIZES = {"hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 2, "intermediate_size": 64}
SENTENCES = ["a man is playing a guitar.", "the president visited the city in 1990 with his family."]


@pytest.fixture(scope="module")
def prenorm_backbone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import RobertaPreLayerNormConfig, RobertaPreLayerNormModel

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("prenorm")
    config = RobertaPreLayerNormConfig(vocab_size=30522, max_position_embeddings=66, pad_token_id=0, **SIZES)
    RobertaPreLayerNormModel(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_folder()).save_pretrained(folder)
    return folder


def by_hand(backbone: Path, layers: list[int]) -> torch.Tensor:
    """Masked token mean of the average of `layers`, the intermediate ones layer-normed without affine."""
    tokenizer, model = AutoTokenizer.from_pretrained(backbone), AutoModel.from_pretrained(backbone).eval()
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch, output_hidden_states=True).hidden_states
    last = len(hidden) - 1
    chosen = [
        hidden[i] if i in (0, last) else torch.nn.functional.layer_norm(hidden[i], (32,)) for i in layers
    ]
    tokens = torch.stack(chosen).mean(0)
    mask = batch["attention_mask"].unsqueeze(-1).float()
    return (tokens * mask).sum(1) / mask.sum(1)


def test_first_last_avg_on_a_prenorm_backbone_averages_layer_normed_layers(prenorm_backbone: Path) -> None:
    model = build_model(str(prenorm_backbone), "first_last_avg").eval()
    assert isinstance(model[1], NormalizeHiddenStates) and model[1].layers == [1, 2]
    expected = by_hand(prenorm_backbone, [1, 3])
    assert torch.allclose(model.encode(SENTENCES, convert_to_tensor=True), expected, atol=1e-5)
    # the raw residual stream would give another vector: the module is what makes the difference
    tokenizer, raw = (
        AutoTokenizer.from_pretrained(prenorm_backbone),
        AutoModel.from_pretrained(prenorm_backbone),
    )
    with torch.no_grad():
        hidden = raw(**tokenizer(SENTENCES, padding=True, return_tensors="pt"), output_hidden_states=True)
    assert not torch.allclose(
        hidden.hidden_states[1], torch.nn.functional.layer_norm(hidden.hidden_states[1], (32,))
    )


@pytest.mark.parametrize("pooling", ["lwap", "weighted", "last2_avg"])
def test_every_pooler_reading_layers_gets_them_normed_first(prenorm_backbone: Path, pooling: str) -> None:
    model = build_model(str(prenorm_backbone), pooling, weighted_layer_start=2)
    assert [type(m).__name__ for m in model][:2] == ["Transformer", "NormalizeHiddenStates"]


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_poolers_of_the_last_layer_alone_are_left_as_they_are(prenorm_backbone: Path, pooling: str) -> None:
    assert not any(isinstance(m, NormalizeHiddenStates) for m in build_model(str(prenorm_backbone), pooling))


def test_a_post_layernorm_bert_is_left_as_it_is(tmp_path: Path) -> None:
    BertModel(BertConfig(**SIZES)).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(tokenizer_folder()).save_pretrained(tmp_path)
    assert not any(isinstance(m, NormalizeHiddenStates) for m in build_model(str(tmp_path), "first_last_avg"))


def test_saved_and_loaded_by_lwap_and_by_sentence_transformers_alone(
    prenorm_backbone: Path, tmp_path: Path
) -> None:
    model = build_model(str(prenorm_backbone), "lwap").eval()
    expected = model.encode(SENTENCES, convert_to_tensor=True)
    model.save(str(tmp_path / "saved"))
    for loaded in (
        load_model(tmp_path / "saved"),
        SentenceTransformer(str(tmp_path / "saved"), trust_remote_code=True, local_files_only=True),
    ):
        assert any(type(m).__name__ == "NormalizeHiddenStates" for m in loaded)
        assert torch.allclose(loaded.eval().encode(SENTENCES, convert_to_tensor=True), expected, atol=1e-5)


def test_a_damaged_module_config_is_refused_on_load(prenorm_backbone: Path, tmp_path: Path) -> None:
    """A saved folder whose NormalizeHiddenStates config names no layer index: one ModelLoadError naming
    the file, before the load (lwap.checks.module_fit), not a crash at the first encode."""
    import json

    from lwap.errors import ModelLoadError
    from lwap.portable import folder_type

    assert folder_type(NormalizeHiddenStates) == "hidden_state_norm.NormalizeHiddenStates"
    build_model(str(prenorm_backbone), "first_last_avg").save(str(tmp_path / "m"))
    config = next((tmp_path / "m").glob("*_NormalizeHiddenStates")) / "config.json"
    config.write_text(json.dumps({"layers": ["one"], "eps": 1e-5}), encoding="utf-8")
    with pytest.raises(
        ModelLoadError, match=r"NormalizeHiddenStates/config\.json: cannot build NormalizeHiddenS"
    ):
        load_model(tmp_path / "m")
