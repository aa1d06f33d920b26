"""`training.report_to` reaches transformers (and is refused in one line when it cannot), several hard
negatives train end to end, and the card's front matter carries a `model-index` of the scores it reports."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from eval_mirror import make_mirror
from test_train_formats import ROWS, train_error

from lwap.cli import main
from lwap.train import load_config, train
from lwap.train.config import config_from_dict


def _front_matter(card: str) -> dict:
    return yaml.safe_load(card.split("---", 2)[1])


def _index(front: dict) -> dict[tuple[str, str, str], float]:
    """(dataset type, split, metric type) -> value, from the card's model-index (one model)."""
    (model,) = front["model-index"]
    entries = {}
    for result in model["results"]:
        for metric in result["metrics"]:
            key = (result["dataset"]["type"], result["dataset"]["split"], metric["type"])
            entries[key] = metric["value"]
    return entries


def test_three_hard_negatives_train_report_nowhere_and_the_card_indexes_its_scores(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    mirror = tmp_path / "mirror"
    make_mirror(mirror)  # a small STS-B dev, so the selection is quick
    monkeypatch.setenv("LWAP_DATA_DIR", str(mirror))
    data = tmp_path / "pairs.jsonl"
    rows = [dict(row, n3=f"another text {i}") for i, row in enumerate(ROWS * 8)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    raw = {
        "output": {"dir": str(tmp_path / "run"), "save_steps": 2},
        "model": {"backbone": str(tiny_bert), "pooling": "mean", "max_seq_length": 16},
        "data": {
            "train": str(data),
            "anchor_column": "query",
            "positive_column": "doc",
            "hard_negative_columns": ["n1", "n2", "n3"],
        },
        "objective": {"name": "sup_simcse", "hard_negative_weight": 2.0},
        "training": {"max_steps": 4, "per_device_batch_size": 4, "report_to": "none", "progress_bar": False},
        "eval": {"dev": "stsb", "keep_best": True, "before_training": True, "eval_steps": 2},
    }
    config = config_from_dict(raw)
    assert config.data.hard_negative_column is None  # its default gives way to the list
    summary = train(config)
    out = tmp_path / "run"
    assert summary["steps"] == 4 and summary["train_examples"] == 24
    assert summary["sentences_per_second"] == pytest.approx(5 * summary["examples_per_second"], rel=0.01)
    assert not (out / "tensorboard").exists()  # report_to: none
    card = (out / "model" / "README.md").read_text(encoding="utf-8")
    assert "24 (anchor, positive, 3 hard negatives) tuples from `pairs.jsonl`" in card
    entries = _index(_front_matter(card))
    assert entries == {("stsb", "validation", "spearman_cosine"): summary["final_model_dev_score"]}

    capsys.readouterr()
    assert main(["card", str(out), "--eval", "--tasks", "stsb", "sickr", "scifact"]) == 0
    card = (out / "model" / "README.md").read_text(encoding="utf-8")
    front = _front_matter(card)
    (this_label, this_model), _backbone = json.loads((out / "card_eval.json").read_text())["rows"]
    assert this_label == "this model"
    expected = {("stsb", "validation", "spearman_cosine"): summary["final_model_dev_score"]}
    for name in ("stsb", "sickr"):
        expected[name, "test", "spearman_cosine"] = this_model["sts"][name]["score"]
    for key in ("ndcg@10", "mrr@10", "recall@100"):
        expected["scifact", "test", key.replace("@", "_at_")] = this_model["search"]["scifact"][key]
    assert _index(front) == pytest.approx(expected)
    (model,) = front["model-index"]
    assert model["name"] == f"{tiny_bert} + mean pooling, supervised SimCSE"
    names = {(r["dataset"]["type"], r["dataset"]["split"]): r["dataset"]["name"] for r in model["results"]}
    assert names["sickr", "test"] == "SICK-R" and names["stsb", "test"] == "STS-B"
    assert names["stsb", "validation"].startswith("STS-B dev (the selection set")
    assert f"| this model | {this_model['sts']['stsb']['score']:.2f} |" in card  # what the index repeats
    # the hub's own reader of cards agrees
    from huggingface_hub import ModelCard

    results = ModelCard(card).data.eval_results
    assert len(results) == len(expected) and {r.dataset_split for r in results} == {"validation", "test"}


def test_report_to_passes_through_to_transformers(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TensorBoard stays lwap's own callback (OUT/tensorboard); the other names reach TrainingArguments."""
    from lwap import build_model
    from lwap.train import reporting
    from lwap.train.trainer import training_arguments

    model = build_model(str(tiny_bert), "mean")

    def args(report_to: object):
        raw = {
            "output": {"dir": str(tmp_path / "run")},
            "model": {"backbone": str(tiny_bert), "pooling": "mean"},
            "data": {"train": "x.txt"},
            "objective": {"name": "unsup_simcse"},
            "training": {"report_to": report_to, "device": "cpu"},
            "eval": {"dev": None, "keep_best": False},
        }
        return training_arguments(config_from_dict(raw), tmp_path / "run", model, None, resuming=False)

    assert args("tensorboard").report_to == [] and args("none").report_to == []
    # mlflow and wandb are not dependencies of lwap: as if they were installed
    available = reporting.get_available_reporting_integrations()
    monkeypatch.setattr(
        reporting,
        "get_available_reporting_integrations",
        lambda: [*available, "mlflow", "wandb"],
    )
    assert args(["tensorboard", "mlflow"]).report_to == ["mlflow"]
    assert args(["wandb", "mlflow"]).report_to == ["wandb", "mlflow"]


@pytest.mark.parametrize(
    ("report_to", "says"),
    [
        ("tensorbord", "training.report_to: unknown value 'tensorbord' (did you mean 'tensorboard'?)"),
        (["none", "tensorboard"], "training.report_to lists 'none' with others"),
        (["tensorboard", "tensorboard"], "training.report_to names an integration twice"),
        ([], "training.report_to must be an integration name or a list of them"),
    ],
)
def test_report_to_refusals(tmp_path: Path, tiny_bert: Path, capsys, report_to: object, says: str) -> None:
    (tmp_path / "t.jsonl").write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    data = {"train": str(tmp_path / "t.jsonl")}
    assert says in train_error(tmp_path, tiny_bert, capsys, data, training={"report_to": report_to})


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed here")
def test_an_integration_that_is_not_installed_is_one_line(tmp_path: Path, tiny_bert: Path, capsys) -> None:
    (tmp_path / "t.jsonl").write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    data = {"train": str(tmp_path / "t.jsonl")}
    line = train_error(tmp_path, tiny_bert, capsys, data, training={"report_to": ["tensorboard", "wandb"]})
    assert "training.report_to: wandb not installed in this environment" in line and "tensorboard" in line


def test_the_shipped_configs_log_to_tensorboard() -> None:
    from conftest import REPO

    for path in sorted(p for p in (REPO / "configs").rglob("*.yaml") if p.parent.name != "rows"):
        assert load_config(path).training.report_to == "tensorboard", path
