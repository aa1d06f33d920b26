"""The saved model's card names base model, pooling and objective, and reports the kept checkpoint's score."""

from __future__ import annotations

import dataclasses
import re
from types import SimpleNamespace

from lwap.config_files import resolve_config
from lwap.eval.evaluators import stsb_evaluator
from lwap.model import build_model
from lwap.train.config import load_config
from lwap.train.model_card import describe_run, metrics_at_step

PREFIX = "eval_stsb-dev_"


def _log(step: int, spearman: float) -> dict:
    return {PREFIX + "pearson_cosine": spearman - 0.01, PREFIX + "spearman_cosine": spearman, "step": step}


def _trainer(model, evaluator, best_step: int | None, last_step: int):
    history = [_log(0, 0.7997), {"loss": 0.2, "step": 1}, _log(150, 0.8387), _log(250, 0.8381)]
    state = SimpleNamespace(log_history=history, best_global_step=best_step, global_step=last_step)
    return SimpleNamespace(model=model, evaluator=evaluator, state=state)


def test_metrics_at_step_reads_the_evaluators_keys() -> None:
    history = [_log(150, 0.8387), _log(250, 0.8381)]
    assert metrics_at_step(history, "stsb-dev", 150) == {
        "stsb-dev_pearson_cosine": 0.8387 - 0.01,
        "stsb-dev_spearman_cosine": 0.8387,
    }
    assert metrics_at_step(history, "stsb-dev", 7) == {}


def test_card_names_the_run_and_reports_the_kept_checkpoint(tiny_bert, tmp_path) -> None:
    config = load_config(resolve_config("quickstart"))  # backbone: the hub id of the packaged MiniLM
    model = build_model(str(tiny_bert), "lwap", max_seq_length=16)
    evaluator = stsb_evaluator("dev")
    # what sentence-transformers leaves behind: the last evaluation's figures
    model.model_card_data.set_evaluation_metrics(
        evaluator, metrics_at_step([_log(250, 0.8381)], "stsb-dev", 250)
    )
    describe_run(_trainer(model, evaluator, best_step=150, last_step=250), config)
    model.save(str(tmp_path / "model"))
    card = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    title = (
        "# sentence-transformers/all-MiniLM-L6-v2 + layer-wise attention pooling (LWAP), unsupervised SimCSE"
    )
    assert title in card
    assert "base_model: sentence-transformers/all-MiniLM-L6-v2" in card
    assert "value: 0.8387" in card and "value: 0.8381" not in card  # model-index: the kept model
    assert re.search(r"\|\s*\**spearman_cosine\**\s*\|\s*\**0\.8387\**\s*\|", card)  # the metrics table


def test_local_backbone_is_no_base_model_and_last_step_without_keep_best(tiny_bert, tmp_path) -> None:
    config = load_config(resolve_config("quickstart"))
    config = dataclasses.replace(
        config,
        model=dataclasses.replace(config.model, backbone=str(tiny_bert), pooling="mean"),
        eval=dataclasses.replace(config.eval, keep_best=False),
    )
    model = build_model(str(tiny_bert), "mean", max_seq_length=16)
    describe_run(_trainer(model, stsb_evaluator("dev"), best_step=150, last_step=250), config)
    model.save(str(tmp_path / "model"))
    card = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    assert "base_model:" not in card and f"# {tiny_bert} + mean pooling, unsupervised SimCSE" in card
    assert re.search(r"\|\s*\**spearman_cosine\**\s*\|\s*\**0\.8381\**\s*\|", card)
