"""The cost of specialising: a run kept by the user's own dev set shows STS-B dev before and after training
beside its dev score, in the printed result, train_summary.json and the card, without touching which
checkpoint is kept; without STS-B dev the run ends as before, with one note line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from lwap import data_sources

TOPICS = ["guitar music", "stock markets", "river fishing", "mountain weather", "football match"]
STSB_DEV = "stsb/senteval-tokenized/sts-dev.csv"


def write_inputs(tmp_path: Path, tiny_bert: Path) -> Path:
    """Training sentences, a scored pairs dev file and a config that keeps the checkpoint that file picks."""
    train = tmp_path / "sentences.txt"
    train.write_text(
        "".join(f"sentence {i} about {TOPICS[i % 5]} on day {i % 7}\n" for i in range(128)), encoding="utf-8"
    )
    dev = tmp_path / "my-dev.tsv"
    with dev.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(("sentence1", "sentence2", "score"))
        writer.writerows(
            (f"a sentence about {t} {i}", f"words on {TOPICS[(i + j) % 5]} {j}", (i * 7 + j) % 6)
            for i, t in enumerate(TOPICS)
            for j in range(4)
        )
    raw = {
        "output": {"dir": str(tmp_path / "run"), "save_steps": 2, "save_total_limit": None},
        "model": {"backbone": str(tiny_bert), "pooling": "mean", "max_seq_length": 24},
        "data": {"train": str(train)},
        "objective": {"name": "unsup_simcse"},
        "training": {
            "max_steps": 6,
            "per_device_batch_size": 16,
            "learning_rate": 1e-3,
            "logging_steps": 2,
            "progress_bar": False,
        },
        # a trained step is kept, so "after" is another model than "before"
        "eval": {"dev": str(dev), "eval_steps": 2, "keep_best": True, "start_competes": False},
    }
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return config


def logged(out: Path, key: str) -> dict[int, float]:
    with (out / "metrics.csv").open(encoding="utf-8") as handle:
        rows = csv.DictReader(handle)
        return {int(float(r["step"])): float(r["value"]) for r in rows if r["metric"] == key}


def test_a_run_kept_by_your_dev_set_shows_its_general_sts_cost(
    tmp_path: Path, tiny_bert: Path, data_mirror: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lwap import load_model
    from lwap.model import inference_max_seq_length
    from lwap.train import load_config, train
    from lwap.train.dev_sets import DevSet, dev_evaluator
    from lwap.train.trainer import initial_model

    config_file = write_inputs(tmp_path, tiny_bert)
    config = load_config(config_file)
    summary = train(config, config_path=str(config_file))
    out = tmp_path / "run"
    printed = capsys.readouterr().out

    # the user's dev set alone picks: its best trained step, STS-B dev never logged during training
    curve = logged(out, summary["dev_metric_key"])
    trained = {step: score for step, score in curve.items() if step > 0}
    best = max(trained.values())
    assert summary["final_model_step"] == min(step for step, score in trained.items() if score == best)
    assert "stsb-dev" not in (out / "metrics.csv").read_text(encoding="utf-8")

    general = summary["general_sts"]
    assert (general["set"], general["metric"], general["unavailable"]) == ("STS-B dev", "spearman", None)
    # the scores are STS-B dev's (the mirror's) on the saved model and on the rebuilt step-0 weights
    saved = load_model(out / "model")
    length = inference_max_seq_length(saved)
    evaluator = dev_evaluator(DevSet("stsb", "stsb", "spearman"), config.eval, length)
    key = "stsb-dev_spearman_cosine"
    assert general["after"] == pytest.approx(evaluator(saved)[key], abs=1e-6)
    assert general["before"] == pytest.approx(evaluator(initial_model(config))[key], abs=1e-6)
    assert general["before"] != general["after"]
    assert json.loads((out / "train_summary.json").read_text(encoding="utf-8"))["general_sts"] == general

    before, after = general["before"], general["after"]
    dev_set = summary["dev_set"]
    assert dev_set == f"{tmp_path / 'my-dev.tsv'} (scored pairs)"
    dev_line = f"{dev_set} Spearman: before training {summary['dev_score_before']:.4f}, after training "
    assert dev_line + f"{summary['final_model_dev_score']:.4f}" in printed
    change = f"{after - before:+.4f}"
    assert (
        f"general STS, STS-B dev Spearman (not the selection set): before training {before:.4f}, "
        f"after training {after:.4f} ({change}: " in printed
    )

    card = (out / "model" / "README.md").read_text(encoding="utf-8")
    dev_change = f"{summary['final_model_dev_score'] - summary['dev_score_before']:+.4f}"
    assert (
        f"| your dev set: {dev_set} Spearman (the selection set) | {summary['dev_score_before']:.4f} | "
        f"{summary['final_model_dev_score']:.4f} | {dev_change} |" in card
    )
    assert (
        f"| general STS: STS-B dev Spearman (not used for selection) | {before:.4f} | {after:.4f} | "
        f"{change} |" in card
    )
    fell = round(after - before, 4) < 0
    assert ("what the specialist gave up" if fell else "no general similarity given up") in card


def test_a_run_kept_by_stsb_dev_shows_no_second_general_score() -> None:
    from lwap.train.dev_sets import DevSet
    from lwap.train.general_sts import card_section, measure_general_sts

    # STS-B dev picks (or nothing does): its dev scores are the general ones; nothing measured again
    stsb = DevSet("stsb", "stsb", "spearman")
    assert measure_general_sts(None, None, stsb) is None  # type: ignore[arg-type]
    assert measure_general_sts(None, None, None) is None  # type: ignore[arg-type]
    assert card_section({"general_sts": None}, "STS-B dev", "Spearman") is None
    assert card_section({}, "STS-B dev", "Spearman") is None  # a summary from before it was measured


def test_without_sts_b_dev_the_run_ends_with_one_note(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lwap.train import load_config, train

    # no mirror, no packaged copy, the hub offline (conftest): STS-B dev cannot be read anywhere
    monkeypatch.setenv("LWAP_DATA_DIR", str(tmp_path / "no-mirror"))
    monkeypatch.delitem(data_sources.PACKAGED_SAMPLES, STSB_DEV)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config_file = write_inputs(tmp_path, tiny_bert)
    summary = train(load_config(config_file), config_path=str(config_file))
    out = tmp_path / "run"
    captured = capsys.readouterr()

    general = summary["general_sts"]
    assert (general["before"], general["after"]) == (None, None)
    assert STSB_DEV in general["unavailable"] and "LWAP_DATA_DIR" in general["unavailable"]
    notes = [line for line in captured.err.splitlines() if "general STS" in line]
    assert notes == [
        "lwap train: note: general STS (STS-B dev) not measured, so the cost of specialising is not shown: "
        + general["unavailable"]
    ]
    assert "general STS" not in captured.out and "my-dev.tsv (scored pairs) Spearman: before" in captured.out
    assert (out / "model" / "model.safetensors").is_file()  # the run itself is whole
    card = (out / "model" / "README.md").read_text(encoding="utf-8")
    assert "General STS (STS-B dev) was not measured" in card
    assert general["unavailable"] not in card  # the machine's remedies: the terminal's, not the card's
