"""Training on scored pairs (objective scored_pairs): sentence-transformers' own CoSENT, AnglE and cosine
losses chosen by `objective.scored_loss`, scores mapped to [0, 1] from a declared or a read range, the
same formats and one-line refusals as other training data, with any pooler and the user's own dev set."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from sentence_transformers.sentence_transformer.losses import AnglELoss, CoSENTLoss, CosineSimilarityLoss
from test_train_formats import refused_line

from lwap.errors import ConfigError, DataError
from lwap.train.config import DataConfig, config_from_dict
from lwap.train.data import load_train_dataset

TOPICS = ["guitar music", "stock markets", "river fishing", "mountain weather", "football match"]
LOSSES = {"cosent": CoSENTLoss, "angle": AnglELoss, "cosine": CosineSimilarityLoss}


def scored_file(
    path: Path, rows: int = 40, header: tuple[str, ...] = ("sentence1", "sentence2", "score")
) -> Path:
    """Pairs on five topics scored 0-5: 5 for the same topic, lower the further apart their topics are."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter="\t" if path.suffix == ".tsv" else ",")
        writer.writerow(header)
        for i in range(rows):
            a, b = i % 5, (i * 3 + i // 5) % 5
            writer.writerow(
                [f"a note on {TOPICS[a]} {i}", f"words about {TOPICS[b]} {i + 1}", 5 - abs(a - b)]
            )
    return path


def raw_config(tmp_path: Path, tiny_bert: Path, train: Path, **sections: dict) -> dict:
    raw = {
        "output": {"dir": str(tmp_path / "run"), "save_steps": 2, "save_total_limit": None},
        "model": {"backbone": str(tiny_bert), "pooling": "mean", "max_seq_length": 24},
        "data": {"train": str(train), "score_range": [0, 5]},
        "objective": {"name": "scored_pairs"},
        "training": {
            "max_steps": 4,
            "per_device_batch_size": 8,
            "learning_rate": 1e-3,
            "logging_steps": 1,
            "progress_bar": False,
            "report_to": "none",
        },
        "eval": {"dev": None, "keep_best": False},
    }
    for section, keys in sections.items():
        raw[section] = {**raw[section], **keys}
    return raw


def write_config(tmp_path: Path, raw: dict) -> Path:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return config


# --- training end to end -----------------------------------------------------------------------------


@pytest.mark.parametrize(("loss", "pooling"), [("cosent", "lwap"), ("angle", "mean"), ("cosine", "cls")])
def test_each_loss_trains_on_a_scored_csv_with_the_users_dev_set(
    loss: str, pooling: str, tmp_path: Path, tiny_bert: Path
) -> None:
    """Trained end to end with the user's own dev file keeping the best step; the model is saved and
    loads; the card names sentence-transformers' loss."""
    from lwap import load_model
    from lwap.train import load_config, train

    train_file = scored_file(tmp_path / "train.csv")
    dev = scored_file(tmp_path / "dev.tsv", rows=20)
    raw = raw_config(
        tmp_path,
        tiny_bert,
        train_file,
        model={"pooling": pooling},
        objective={"scored_loss": loss},
        eval={"dev": str(dev), "keep_best": True, "eval_steps": 2},
    )
    config = write_config(tmp_path, raw)
    summary = train(load_config(config), config_path=str(config))
    assert summary["steps"] == 4 and summary["train_examples"] == 40
    assert summary["dev_set"] != "STS-B dev" and summary["final_model_step"] in (0, 2, 4)
    model = load_model(tmp_path / "run" / "model")
    assert model.encode(["a note on guitar music"]).shape[-1] == 32
    card = (tmp_path / "run" / "model" / "README.md").read_text(encoding="utf-8")
    assert f"sentence-transformers' {LOSSES[loss].__name__}" in card and "scored-pairs" in card
    assert "scores mapped to [0, 1] from [0, 5]" in card


@pytest.mark.parametrize("loss", list(LOSSES))
def test_the_loss_is_sentence_transformers_own_class(loss: str, tmp_path: Path, tiny_bert: Path) -> None:
    """No reimplementation: the trainer's loss is the library's class itself, its scale 1/τ (20 at τ 0.05),
    and the data it reads is (sentence1, sentence2, score) with the scores in [0, 1]."""
    from lwap.train import load_config
    from lwap.train.trainer import build_trainer, training_inputs

    raw = raw_config(tmp_path, tiny_bert, scored_file(tmp_path / "t.csv"), objective={"scored_loss": loss})
    config = load_config(write_config(tmp_path, raw))
    built = build_trainer(config, tmp_path / "run", training_inputs(config, tmp_path / "run"))
    assert type(built.loss) is LOSSES[loss]
    if loss != "cosine":
        assert built.loss.scale == pytest.approx(20.0)
    assert built.dataset.column_names == ["sentence1", "sentence2", "score"]
    scores = built.dataset["score"]
    assert min(scores) >= 0 and max(scores) == 1.0 and all(s * 5 == round(s * 5) for s in scores)


# --- the score range -----------------------------------------------------------------------------------


def test_a_declared_range_maps_to_zero_one(tmp_path: Path) -> None:
    path = scored_file(tmp_path / "s.csv", rows=10)
    data = load_train_dataset(DataConfig(train=str(path), score_range=[0, 10]), "scored_pairs")
    raw = [float(row[2]) for row in list(csv.reader(path.open(encoding="utf-8")))[1:]]
    assert data["score"] == pytest.approx([s / 10 for s in raw])


def test_a_range_read_from_the_data_is_said_in_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "s.jsonl"
    rows = [
        {"q": "one", "d": "two", "s": 2},
        {"q": "three", "d": "four", "s": 4.5},
        {"q": "x", "d": "y", "s": 3},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    capsys.readouterr()
    data = load_train_dataset(DataConfig(train=str(path), scored_columns=["q", "d", "s"]), "scored_pairs")
    assert data["score"] == pytest.approx([0.0, 1.0, 0.4])
    said = [line for line in capsys.readouterr().err.splitlines() if "lwap train:" in line]
    assert said == [
        f"lwap train: scores of {path} range over [2, 4.5] (read from the data), mapped to [0, 1]; "
        "data.score_range declares the range instead"
    ]


def test_parquet_scores_are_checked_by_row(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = {"sentence1": ["a", "b", "c"], "sentence2": ["d", "e", "f"], "score": [1.0, 6.0, 2.0]}
    pq.write_table(pa.table(table), tmp_path / "s.parquet")
    data = DataConfig(train=str(tmp_path / "s.parquet"), score_range=[0, 5])
    with pytest.raises(
        DataError, match=r"s\.parquet: row 2: score 6 \(score\) is outside data.score_range \[0, 5\]"
    ):
        load_train_dataset(data, "scored_pairs")
    data.score_range = [0, 10]
    assert load_train_dataset(data, "scored_pairs")["score"] == pytest.approx([0.1, 0.6, 0.2])


# --- refusals: one line, exit 2, naming the file and line ----------------------------------------------


def train_error(tmp_path: Path, tiny_bert: Path, capsys, train: Path, **sections: dict) -> str:
    config = write_config(tmp_path, raw_config(tmp_path, tiny_bert, train, **sections))
    return refused_line(tmp_path, capsys, config)  # exit 2, one line, no run folder


def test_bad_scores_are_refused_naming_file_and_line(tmp_path: Path, tiny_bert: Path, capsys) -> None:
    def refused(name: str, content: str, says: str, **data: object) -> None:
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        line = train_error(tmp_path, tiny_bert, capsys, path, data=data)
        assert f"{path}{says}" in line, line

    header = "sentence1,sentence2,score\n"
    refused(
        "out.csv", header + "a,b,4\nc,d,5.5\n", ":3: score 5.5 (score) is outside data.score_range [0, 5]"
    )
    refused("nan.csv", header + "a,b,4\nc,d,high\n", ":3: score 'high' (score) is not a number")
    refused("empty.csv", header + "a,b,\n", ":2: score '' (score) is not a number")
    refused("inf.csv", header + "a,b,inf\n", ":2: score inf (score) is not a finite number")
    refused("none.csv", "sentence1,sentence2\na,b\n", ": missing column(s) 'score'; the header has")
    refused(
        "j.jsonl",
        '{"sentence1": "a", "sentence2": "b", "score": "x"}\n',
        ":1: score 'x' (score) is not a number",
    )
    refused(
        "k.jsonl", '{"sentence1": "a", "sentence2": "b", "score": null}\n', ":1: score null (score) is not a"
    )
    refused(
        "s.txt", "a sentence\n", ": scored_pairs reads a table with columns (sentence1, sentence2, score)"
    )
    refused("flat.csv", header + "a,b,3\nc,d,3\n", ": every pair has the same score (3)", score_range=None)


def test_parquet_scores_that_are_not_numbers_are_refused(tmp_path: Path, tiny_bert: Path, capsys) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"sentence1": ["a"], "sentence2": ["b"], "score": ["4"]}), path)
    line = train_error(tmp_path, tiny_bert, capsys, path)
    assert f"{path}: column 'score' holds string, expected numbers (the scores)" in line


# --- the config keys -----------------------------------------------------------------------------------


def config_error(**sections: dict) -> str:
    raw = {
        "output": {"dir": "x"},
        "model": {"backbone": "b", "pooling": "mean"},
        "data": {"train": "x.csv"},
        "objective": {"name": "scored_pairs"},
    }
    for section, keys in sections.items():
        raw[section] = {**raw.get(section, {}), **keys}
    with pytest.raises(ConfigError) as error:
        config_from_dict(raw, "c.yaml")
    assert "\n" not in str(error.value)
    return str(error.value)


def test_the_config_keys_are_checked() -> None:
    assert "objective.scored_loss: unknown value 'mse'; valid: cosent, angle, cosine" in config_error(
        objective={"scored_loss": "mse"}
    )
    assert "data.score_range must be [low, high] with low < high" in config_error(
        data={"score_range": [5, 0]}
    )
    assert "data.score_range must be [low, high]" in config_error(data={"score_range": [0, 1, 2]})
    assert "data.scored_columns must be three column names" in config_error(
        data={"scored_columns": ["a", "b"]}
    )
    assert "names a column twice" in config_error(data={"scored_columns": ["a", "a", "s"]})
    said = config_error(training={"mini_batch_size": 4})
    assert "training.mini_batch_size is GradCache of SimCSE's loss; objective scored_pairs" in said
    assert "objective.matryoshka_dims" in config_error(objective={"matryoshka_dims": [16]})
    assert "objective.hard_negative_weight" in config_error(objective={"hard_negative_weight": 2.0})
    assert "objective.temperature" in config_error(objective={"scored_loss": "cosine", "temperature": 0.1})
    unsup = {"name": "unsup_simcse", "scored_loss": "angle"}
    assert "objective.scored_loss applies to objective scored_pairs only" in config_error(objective=unsup)
    sup = {"name": "sup_simcse"}
    said = config_error(objective=sup, data={"score_range": [0, 5]})
    assert "data.score_range applies to objective scored_pairs only" in said
