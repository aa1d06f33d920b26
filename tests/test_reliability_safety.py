"""Safe loading: safetensors only, YAML without Python tags, and docs/RELIABILITY.md naming real tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from lwap import build_model, load_model
from lwap.errors import ConfigError, LwapError
from lwap.train import load_config

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def saved_lwap(tiny_bert: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "m"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    return folder


def test_pooling_weights_as_pickle_are_refused(saved_lwap: Path) -> None:
    head = saved_lwap / "1_LayerwiseAttentionPooling"
    torch.save(load_file(head / "model.safetensors"), head / "pytorch_model.bin")
    (head / "model.safetensors").unlink()
    with pytest.raises(LwapError, match="safetensors only"):
        load_model(saved_lwap)


def test_backbone_weights_as_pickle_are_refused(saved_lwap: Path) -> None:
    torch.save(load_file(saved_lwap / "model.safetensors"), saved_lwap / "pytorch_model.bin")
    (saved_lwap / "model.safetensors").unlink()
    with pytest.raises(LwapError, match="safetensors"):
        load_model(saved_lwap)


def test_yaml_python_tags_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    config = tmp_path / "evil.yaml"
    config.write_text(f'output: !!python/object/apply:os.system ["touch {marker}"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(config)
    assert not marker.exists()


def test_reliability_catalogue_names_existing_tests() -> None:
    """Every row of docs/RELIABILITY.md points at a test that exists; at least 30 cases."""
    doc = (REPO / "docs" / "RELIABILITY.md").read_text(encoding="utf-8")
    rows = [line for line in doc.splitlines() if re.match(r"^\| \d+ \|", line)]
    assert len(rows) >= 30
    for row in rows:
        refs = re.findall(r"`(tests/[\w/]+\.py)::(\w+)", row)
        assert refs, f"row without a test: {row}"
        for file, name in refs:
            source = (REPO / file).read_text(encoding="utf-8")
            assert re.search(rf"^def {name}\(", source, re.M), f"{file}::{name} does not exist"
