"""`model.dropout`: SimCSE's noise rate set on the backbone (hidden and attention dropout) for training,
kept in the saved config; null keeps the backbone's own; a bad value or a backbone naming its rates
otherwise is a ConfigError, and a YAML with a bad value exits 2 naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import DistilBertConfig, DistilBertModel

from lwap import build_model
from lwap.errors import ConfigError
from lwap.train.config import load_config


def dropout_rates(model) -> set[float]:
    return {m.p for m in model[0].auto_model.modules() if isinstance(m, torch.nn.Dropout)}


def test_the_rate_reaches_every_dropout_of_the_backbone_and_its_saved_config(
    tiny_bert: Path, tmp_path: Path
) -> None:
    own = build_model(str(tiny_bert), "mean")
    assert dropout_rates(own) == {0.1}  # the backbone's config
    model = build_model(str(tiny_bert), "mean", dropout=0.05)
    assert dropout_rates(model) == {0.05}
    config = model[0].auto_model.config
    assert (config.hidden_dropout_prob, config.attention_probs_dropout_prob) == (0.05, 0.05)
    model.save(str(tmp_path / "saved"))
    assert '"hidden_dropout_prob": 0.05' in (tmp_path / "saved" / "config.json").read_text()


def test_bad_rates_and_other_names_are_config_errors(tiny_bert: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model.dropout must be in \[0, 1\)"):
        build_model(str(tiny_bert), "mean", dropout=1.0)
    folder = tmp_path / "distil"
    DistilBertModel(
        DistilBertConfig(dim=32, hidden_dim=64, n_layers=1, n_heads=2, vocab_size=30522)
    ).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (tiny_bert / name).is_file():
            (folder / name).write_bytes((tiny_bert / name).read_bytes())
    with pytest.raises(ConfigError, match="names its dropout otherwise"):
        build_model(str(folder), "mean", dropout=0.05)


def test_the_yaml_key_is_checked(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[1]
    with pytest.raises(ConfigError, match=r"model.dropout.*in \[0, 1\) or null"):
        load_config(repo / "configs/quickstart.yaml", ["model.dropout=1.5"])
    assert load_config(repo / "configs/quickstart.yaml", ["model.dropout=0.05"]).model.dropout == 0.05
