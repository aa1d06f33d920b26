"""The sentence-transformers features a user reaches for, on lwap models: half precision, a dtype for the
backbone, truncate_dim, similarity, and further fine-tuning with the stock trainer and loss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import SENTENCES
from sentence_transformers import SentenceTransformer

from lwap import build_model, find_lwap, load_model


@pytest.fixture
def saved_lwap(tiny_bert: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "m"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    return folder


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_half_precision_model(saved_lwap: Path) -> None:
    model = load_model(saved_lwap)
    full = model.encode(SENTENCES)
    half = model.half().encode(SENTENCES)
    assert np.isfinite(half).all() and _cosines(full, half).min() > 0.999


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_backbone_dtype_from_model_kwargs(saved_lwap: Path, dtype: torch.dtype) -> None:
    """model_kwargs={"dtype": ...}: sentence-transformers loads the whole model (LWAP head too) in it."""
    full = load_model(saved_lwap).encode(SENTENCES)
    model = SentenceTransformer(str(saved_lwap), trust_remote_code=True, model_kwargs={"dtype": dtype})
    assert model[0].auto_model.dtype == dtype and model[1].query.weight.dtype == dtype
    assert _cosines(full, model.encode(SENTENCES)).min() > 0.99


def test_head_reads_a_backbone_in_another_dtype(saved_lwap: Path) -> None:
    model = load_model(saved_lwap)
    full = model.encode(SENTENCES)
    model[0].auto_model.to(torch.bfloat16)  # the backbone alone in bf16: the fp32 head casts what it reads
    assert _cosines(full, model.encode(SENTENCES)).min() > 0.99


def test_truncate_dim_and_similarity(saved_lwap: Path) -> None:
    full = load_model(saved_lwap).encode(SENTENCES)
    model = SentenceTransformer(str(saved_lwap), trust_remote_code=True, truncate_dim=8)
    short = model.encode(SENTENCES)
    np.testing.assert_allclose(short, full[:, :8], atol=1e-6, rtol=0)
    assert model.similarity_fn_name == "cosine"
    scores = model.similarity(short, short).numpy()
    expected = short @ short.T / np.outer(np.linalg.norm(short, axis=1), np.linalg.norm(short, axis=1))
    np.testing.assert_allclose(scores, expected, atol=1e-5)


@pytest.mark.parametrize("loader", ["lwap.load_model", "SentenceTransformer"])
def test_further_fine_tuning_with_the_stock_trainer(saved_lwap: Path, tmp_path: Path, loader: str) -> None:
    """Loaded either way, a model trains on with SentenceTransformerTrainer and a stock loss, and what it
    saves loads again, with lwap and without, encoding as the fine-tuned model does."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    if loader == "lwap.load_model":
        model = load_model(saved_lwap)
    else:
        model = SentenceTransformer(str(saved_lwap), trust_remote_code=True)
    before = model.encode(SENTENCES)
    pairs = Dataset.from_dict({"anchor": SENTENCES * 4, "positive": SENTENCES[1:] * 4 + SENTENCES[:1] * 4})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "run"),
        max_steps=3,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=pairs, loss=MultipleNegativesRankingLoss(model)
    )
    trainer.train()
    assert all(np.isfinite(entry["loss"]) for entry in trainer.state.log_history if "loss" in entry)
    after = model.encode(SENTENCES)
    assert not np.allclose(before, after, atol=1e-4)
    model.save(str(tmp_path / "tuned"))
    reloaded = load_model(tmp_path / "tuned")
    assert find_lwap(reloaded) is not None
    np.testing.assert_allclose(reloaded.encode(SENTENCES), after, atol=1e-6, rtol=0)
    plain = SentenceTransformer(str(tmp_path / "tuned"), trust_remote_code=True)
    np.testing.assert_allclose(plain.encode(SENTENCES), after, atol=1e-6, rtol=0)
