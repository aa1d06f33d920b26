"""The training speed options: length-grouped batches, eager attention, fast dropout, kept freed memory.

Each must change only speed: batches still cover the data once per epoch, dropout keeps its rate and
scaling, saved models are the same files, and the allocator setting leaves results bit-identical.
Their speed is measured in benchmarks/speed/speed.py, never here.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from conftest import SENTENCES
from datasets import Dataset
from test_train_run import tiny_config

from lwap import build_model
from lwap.train import load_config, train
from lwap.train.fast_dropout import ATTENTION, FastDropout, configure_for_training, fast_dropout
from lwap.train.sampling import LengthGroupedBatches, LengthGroupedBatchSampler, token_lengths


def padded_tokens(batches: list[list[int]], lengths: np.ndarray) -> int:
    return sum(int(lengths[b].max()) * len(b) for b in batches)


def test_length_grouped_batches_cover_the_data_once_with_less_padding() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 33, size=1000).astype(np.uint16)
    dataset = Dataset.from_dict({"text": ["x"] * 1000})

    def batches(seed: int, drop_last: bool) -> list[list[int]]:
        sampler = LengthGroupedBatchSampler(
            dataset,
            16,
            drop_last,
            generator=torch.Generator().manual_seed(seed),
            lengths=lengths,
            group_size=8,
        )
        got = list(sampler)
        assert len(got) == len(sampler)
        return got

    full = batches(0, drop_last=False)
    assert sorted(i for b in full for i in b) == list(range(1000))  # every example exactly once
    assert len(batches(0, drop_last=True)) == 1000 // 16
    assert all(len(b) == 16 for b in batches(0, drop_last=True))
    assert batches(0, False) == batches(0, False) and batches(0, False) != batches(1, False)
    random_batches = [list(rng.permutation(1000)[i : i + 16]) for i in range(0, 1000, 16)]
    assert padded_tokens(full, lengths) < 0.8 * padded_tokens(random_batches, lengths)
    # the batch order is shuffled: lengths do not sweep down inside each group of 8 batches
    maxima = [int(lengths[b].max()) for b in full[:64]]
    assert maxima != sorted(maxima, reverse=True)
    with pytest.raises(ValueError, match="lengths for a dataset"):
        LengthGroupedBatchSampler(dataset, 16, False, lengths=lengths[:10], group_size=8)


def test_token_lengths_take_the_longest_column(tiny_bert: Path) -> None:
    model = build_model(str(tiny_bert), "cls", max_seq_length=12)
    long = "one two three four five six seven eight nine ten eleven twelve thirteen"
    dataset = Dataset.from_dict({"anchor": ["hi", long, "a b c"], "positive": ["a b c d", "x", "y"]})
    lengths = token_lengths(dataset, model.tokenizer, 12, chunk=2)
    assert lengths.tolist() == [6, 12, 5]  # [CLS] + words + [SEP], truncated at 12
    factory = LengthGroupedBatches(model.tokenizer, 12, group_size=4)
    sampler = factory(dataset, batch_size=1, drop_last=False)
    assert sampler.lengths == [6, 12, 5] and sampler.group_size == 4  # measured when the trainer asks
    assert repr(factory) == "LengthGroupedBatches(group_size=4, max_length=12)"
    record = pickle.loads(pickle.dumps(factory))  # training_args.bin: the settings, not the tokenizer
    assert record.tokenizer is None and repr(record) == repr(factory)


def test_fast_dropout_keeps_rate_scale_and_mask_in_backward() -> None:
    torch.manual_seed(0)
    x = torch.ones(1_000_000, requires_grad=True)
    y = fast_dropout(x, 0.1)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.9) < 0.002
    assert torch.allclose(y[kept], torch.full_like(y[kept], 32768 / (32768 - 3277)))
    assert abs(y.mean().item() - 1.0) < 0.003  # inverted dropout: the expectation is unchanged
    y.backward(torch.full_like(y, 2.0))
    assert torch.equal(x.grad != 0, kept)  # the gradient flows through exactly the kept elements
    torch.manual_seed(1)
    a = fast_dropout(torch.ones(100), 0.5)
    torch.manual_seed(1)
    assert torch.equal(a, fast_dropout(torch.ones(100), 0.5))  # seeded by torch's generator
    z = torch.randn(4, 8)
    assert fast_dropout(z, 0.1, training=False) is z and fast_dropout(z, 0.0) is z
    module = FastDropout(0.3).eval()
    assert module(z) is z
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        fast_dropout(z, 1.0)


def test_configure_for_training_changes_training_only(tiny_bert: Path, tmp_path: Path) -> None:
    torch.manual_seed(0)
    reference = build_model(str(tiny_bert), "lwap", max_seq_length=24).eval()
    model = build_model(str(tiny_bert), "lwap", max_seq_length=24)
    model.load_state_dict(reference.state_dict())
    configure_for_training(model, "eager", fast=True)
    backbone = model[0].auto_model
    assert backbone.config._attn_implementation == ATTENTION
    assert not any(type(m) is torch.nn.Dropout for m in backbone.modules())
    assert sum(isinstance(m, FastDropout) for m in backbone.modules()) > 0

    model.train()
    features = model.preprocess(SENTENCES)
    torch.manual_seed(0)
    first = model(dict(features))["sentence_embedding"]
    second = model(dict(features))["sentence_embedding"]
    assert not torch.allclose(first, second)  # dropout is on in training
    first.sum().backward()
    assert all(p.grad is not None for p in backbone.encoder.parameters())

    model.eval()  # no dropout: eager attention computes what sdpa does
    np.testing.assert_allclose(model.encode(SENTENCES), reference.encode(SENTENCES), atol=1e-5)
    model.save(str(tmp_path / "saved"))
    assert ATTENTION not in (tmp_path / "saved" / "config.json").read_text()
    from lwap import load_model

    reloaded = load_model(tmp_path / "saved")
    assert reloaded[0].auto_model.config._attn_implementation == "sdpa"
    assert not any(isinstance(m, FastDropout) for m in reloaded.modules())
    np.testing.assert_allclose(reloaded.encode(SENTENCES), reference.encode(SENTENCES), atol=1e-5)

    plain = build_model(str(tiny_bert), "cls", max_seq_length=24)
    configure_for_training(plain, "eager", fast=False)
    assert plain[0].auto_model.config._attn_implementation == "eager"
    assert any(type(m) is torch.nn.Dropout for m in plain.modules())


@pytest.mark.slow
def test_training_run_with_every_speed_option(tmp_path: Path, tiny_bert: Path) -> None:
    options = {
        "batch_sampler": "length_grouped",
        "length_group_size": 4,
        "attention": "eager",
        "fast_dropout": True,
        "max_steps": 8,
    }
    path = tiny_config(tmp_path, tiny_bert, training=options)
    summary = train(load_config(path))
    assert summary["steps"] == 8 and summary["config"]["training"]["batch_sampler"] == "length_grouped"
    first_loss = next(
        row for row in (tmp_path / "run" / "metrics.csv").read_text().splitlines() if "loss" in row
    )
    assert float(first_loss.split(",")[-1]) > 0
    saved = tmp_path / "run" / "model"
    assert ATTENTION not in (saved / "config.json").read_text()


@pytest.mark.slow
def test_keep_freed_memory_leaves_results_identical(tmp_path: Path, tiny_bert: Path) -> None:
    """The allocator setting is process-wide, so each run gets its own `lwap train` process."""
    losses = {}
    for keep in (False, True):
        path = tiny_config(tmp_path, tiny_bert, name=f"keep-{keep}", training={"keep_freed_memory": keep})
        subprocess.run([sys.executable, "-m", "lwap", "train", str(path)], check=True, capture_output=True)
        rows = (tmp_path / f"keep-{keep}" / "metrics.csv").read_text().splitlines()
        losses[keep] = [row for row in rows if ",loss," in row]
        assert len(losses[keep]) == 12
        saved = yaml.safe_load((tmp_path / f"keep-{keep}" / "config.yaml").read_text())
        assert saved["training"]["keep_freed_memory"] is keep
    assert losses[True] == losses[False]
    summary = json.loads((tmp_path / "keep-True" / "train_summary.json").read_text())
    assert summary["steps"] == 12
