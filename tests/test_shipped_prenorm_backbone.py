"""Issue 36's backbone that has learned language (benchmarks/backbones/bert-prenorm-4l256-sentences): it
loads offline as a plain pre-LayerNorm encoder, and its SOURCE.md states the held-out loss its own loss
curve ends at, under the issue's 4.0 target and far under the unigram model on the same tokens."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
BACKBONE = REPO / "benchmarks" / "backbones" / "bert-prenorm-4l256-sentences"


def test_it_loads_offline_as_a_plain_prenorm_encoder() -> None:
    from transformers import AutoModel

    from lwap import build_model

    model, info = AutoModel.from_pretrained(BACKBONE, output_loading_info=True)
    assert not any(info.values()), info
    c = model.config
    assert (c.model_type, c.num_hidden_layers, c.hidden_size, c.hidden_dropout_prob) == (
        "roberta-prelayernorm", 4, 256, 0.1,  # dropout written back for SimCSE
    )  # fmt: skip
    assert model.dtype == torch.float32 and not (BACKBONE / "modules.json").exists()
    encoder = build_model(str(BACKBONE), pooling="first_last_avg")
    assert [type(m).__name__ for m in encoder][:2] == ["Transformer", "NormalizeHiddenStates"]
    vectors = encoder.encode(["A man is playing a guitar.", "Stocks fell."], convert_to_tensor=True)
    assert vectors.shape == (2, 256) and torch.isfinite(vectors).all()


def test_its_source_md_states_the_loss_its_curve_ends_at() -> None:
    source = (BACKBONE / "SOURCE.md").read_text(encoding="utf-8")
    rows = list(csv.DictReader((BACKBONE / "loss_curve.csv").open(encoding="utf-8")))
    held_out = [r for r in rows if r["held_out_loss"]]
    last, step = float(held_out[-1]["held_out_loss"]), held_out[-1]["step"]
    assert f"Held-out MLM loss {last:.4f}, perplexity {math.exp(last):.1f} (step {step};" in source
    assert last <= 4.0 and f"{step}/{step} steps" in source  # the target, at the schedule's end
    unigram = float(re.search(r"a unigram model, no context\) scores (\d+\.\d+)", source).group(1))
    assert last < unigram - 3.0
    assert "one sentence a row" in source and "Pre-LayerNorm" in source
