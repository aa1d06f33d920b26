"""With the offline variables set, encode, eval and a tiny training never open a network connection."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest
from test_train_run import tiny_config

from lwap import build_model
from lwap.cli import main


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every way Python opens a connection or resolves a name raises and is recorded."""
    attempts: list[str] = []

    def refuse(*args, **kwargs):
        attempts.append(repr(args[:2]))
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(variable, "1")
    return attempts


def test_the_guard_itself_blocks_connections(no_network: list[str]) -> None:
    with pytest.raises(OSError, match="network access attempted"):
        socket.create_connection(("127.0.0.1", 9))
    assert no_network


@pytest.mark.slow
def test_encode_eval_and_training_stay_offline(
    no_network: list[str], tiny_bert: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "tiny-lwap"
    build_model(str(tiny_bert), "lwap").save(str(model_dir))
    text = tmp_path / "in.txt"
    text.write_text("one sentence\nanother one\n", encoding="utf-8")
    out = tmp_path / "out.npy"
    assert main(["encode", str(model_dir), "--input", str(text), "--output", str(out), "--no-progress"]) == 0
    assert np.load(out).shape == (2, 32)

    eval_dir = tmp_path / "eval"
    assert main(["eval", str(model_dir), "--tasks", "stsb", "--output", str(eval_dir), "--no-progress"]) == 0
    assert (eval_dir / "results.json").is_file()

    config = tiny_config(tmp_path, tiny_bert, training={"max_steps": 3})
    assert main(["train", str(config)]) == 0
    assert (tmp_path / "run" / "model" / "modules.json").is_file()
    assert no_network == []
