"""The card `lwap train` writes, and `lwap card --eval`: what a reader of the published model sees."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import yaml
from eval_mirror import make_mirror
from test_train_run import tiny_config

from lwap.cli import main
from lwap.train import load_config, train


def _front_matter(card: str) -> dict:
    return yaml.safe_load(card.split("---", 2)[1])


def test_card_says_how_to_load_what_was_trained_and_the_real_losses(
    tiny_bert: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    native = {"lwap_start": "native", "native_pooling": "mean"}
    train(load_config(tiny_config(tmp_path, tiny_bert, training={"max_steps": 4}, model=native)))
    out = tmp_path / "run"
    card = (out / "model" / "README.md").read_text(encoding="utf-8")
    front = _front_matter(card)
    assert front["license"] and front["language"] == "en" and "lwap" in front["tags"]
    assert 'model = SentenceTransformer("sentence_transformers_model_id", trust_remote_code=True)' in card
    assert "`layerwise_attention.py`" in card and "`module_io.py`" in card
    assert "arXiv:2209.05972" in card and "Oh, Dongsuk" in card  # LWAP explained and cited
    assert "native start" in card and "exactly zero before training" in card
    assert "512 sentences from `wiki_sentences_1m.txt.gz`, its first 512 rows" in card
    with (out / "metrics.csv").open(encoding="utf-8") as handle:
        losses = [
            (int(r["step"]), float(r["value"])) for r in csv.DictReader(handle) if r["metric"] == "loss"
        ]
    assert len(losses) == 4
    for step, loss in losses:  # every logged loss, with significant digits (never 0.0000)
        assert f"| {step} | {loss:.4g} |" in card
    assert "Not evaluated on held-out sets yet" in card

    root = tmp_path / "mirror"
    make_mirror(root)
    monkeypatch.setenv("LWAP_DATA_DIR", str(root))
    capsys.readouterr()
    assert main(["card", str(out / "model"), "--eval", "--tasks", "stsb", "sickr", "scifact"]) == 0
    card = (out / "model" / "README.md").read_text(encoding="utf-8")
    rows = json.loads((out / "card_eval.json").read_text(encoding="utf-8"))["rows"]
    assert [label for label, _ in rows] == ["this model", f"backbone `{tiny_bert}` (mean pooling)"]
    for label, results in rows:
        stsb, sickr = results["sts"]["stsb"]["score"], results["sts"]["sickr"]["score"]
        ndcg = results["search"]["scifact"]["ndcg@10"]
        assert f"| {label} | {stsb:.2f} | {sickr:.2f} |" in card and f" {ndcg:.2f} |" in card
    assert "Held-out test sets, scored by `lwap eval`" in card


def test_card_command_refuses_a_folder_that_is_no_run(tmp_path: Path, capsys) -> None:
    assert main(["card", str(tmp_path)]) == 2
    assert "not a complete lwap train run (no model/modules.json" in capsys.readouterr().err


def test_card_names_lwaps_variants_and_not_the_papers_defaults() -> None:
    from lwap.train.config import ModelConfig
    from lwap.train.model_card import _about_lwap

    paper = _about_lwap(ModelConfig(backbone="b", pooling="lwap"))
    assert "varies the paper's head" not in paper
    variant = ModelConfig(backbone="b", pooling="lwap", lwap_queries="latent", lwap_output="attention")
    text = _about_lwap(variant)
    assert text.startswith(paper)
    assert "4 learned query vectors (not the layers' [CLS]) attend over the layers' means" in text
    assert "the output layer reads the attention alone, without the last [CLS]" in text
    meanq = _about_lwap(ModelConfig(backbone="b", pooling="lwap", lwap_queries="mean"))
    assert (
        "each layer's masked mean (not its [CLS]) queries the layers." in meanq
        and "output layer" not in meanq
    )
