"""Training configs: the shipped recipes are short, list only what they change and still mean what they were
written to mean, and build; old and flat keys load; bad configs fail naming file and key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from lwap import data_sources, registry
from lwap.cli import main
from lwap.errors import ConfigError
from lwap.train.config import TrainConfig, config_from_dict, dump_config, load_config
from lwap.train.config_schema import REQUIRED as NO_DEFAULT
from lwap.train.config_schema import SECTIONS, all_keys, default_of

CONFIGS = sorted(p for p in (REPO / "configs").rglob("*.yaml") if p.parent.name != "rows")  # rows: compare
REQUIRED = {
    "quickstart.yaml",
    "unsup-simcse-bert-base-lwap.yaml",
    "sup-simcse-bert-base-lwap.yaml",
    "unsup-simcse-bert-base-cls.yaml",
    "sup-simcse-bert-base-cls.yaml",
}


def minimal(**sections: dict) -> dict:
    raw = {
        "output": {"dir": "out"},
        "model": {"backbone": "b", "pooling": "lwap"},
        "data": {"train": "x.txt"},
        "objective": {"name": "unsup_simcse"},
    }
    for name, values in sections.items():
        raw.setdefault(name, {}).update(values)
    return raw


def write(tmp_path: Path, raw: dict | str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(raw if isinstance(raw, str) else yaml.safe_dump(raw), encoding="utf-8")
    return path


def test_required_configs_exist() -> None:
    assert {p.name for p in CONFIGS} >= REQUIRED


def listed(path: Path) -> dict[str, object]:
    """'section.key' -> value, for every key the YAML file itself writes."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {f"{section}.{key}": value for section, values in raw.items() for key, value in values.items()}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_recipe_lists_only_what_it_changes(path: Path) -> None:
    """A recipe is short and says only what it sets: each key it writes is required or differs from its
    default, and no option of another pooler than its own is among them."""
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 40
    config = load_config(path)
    fields = {f"{section}.{f.name}": f for section, cls in SECTIONS.items() for f in dataclasses.fields(cls)}
    for key in listed(path):
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        default = default_of(fields[key])
        assert default is NO_DEFAULT or value != default, f"{key} is written at its default"
    own = {option.name for option in registry.POOLERS[config.model.pooling].options}
    others = {f"model.{name}" for name in registry.OPTIONS} - {f"model.{name}" for name in own}
    assert not others & set(listed(path)), "another pooler's option"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_recipe_plus_the_defaults_is_what_it_was_written_against(path: Path) -> None:
    """What a recipe leaves out takes the values tests/recipe_defaults.yaml pins (those of the recipes
    when they still wrote every key): a changed default must not move a recipe, or the compare configs'
    committed cells, unnoticed."""
    pinned = listed(REPO / "tests" / "recipe_defaults.yaml")
    required = {k for k in all_keys() if default_of(_field(k)) is NO_DEFAULT}
    assert set(pinned) == set(all_keys()) - required, "tests/recipe_defaults.yaml: one entry per optional key"
    config, written = load_config(path), listed(path)
    for key, value in pinned.items():
        if key not in written:
            section, name = key.split(".")
            assert getattr(getattr(config, section), name) == value, f"{path.name}: {key} moved"


def _field(key: str) -> dataclasses.Field:
    section, name = key.split(".")
    return next(f for f in dataclasses.fields(SECTIONS[section]) if f.name == name)


def test_flat_pooler_options_of_another_pooler_load_with_a_note(tmp_path: Path, monkeypatch, capsys) -> None:
    """`--set model.weighted_layer_start=3` on every row of a grid: the lwap row loads it (unused) and says
    so once; at its default, or for its own pooler, nothing is said."""
    monkeypatch.setattr(data_sources, "_said", set())
    path = write(tmp_path, minimal())
    assert load_config(path, ["model.weighted_layer_start=3"]).model.weighted_layer_start == 3
    assert load_config(path, ["model.weighted_layer_start=3"]).model.pooling == "lwap"
    err = capsys.readouterr().err.splitlines()
    says = "model.weighted_layer_start is an option of pooling weighted; pooling lwap does not read it"
    assert err == [f"lwap: {path}: {says}"]
    load_config(path, ["model.weighted_layer_start=4", "model.lwap_start=native"])
    load_config(path, ["model.pooling=weighted", "model.weighted_layer_start=3"])
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_builds_with_tiny_backbone(path: Path, tiny_bert: Path) -> None:
    from lwap.train.losses import SimCSELoss
    from lwap.train.trainer import build_configured_model

    config = load_config(path, [f"model.backbone={tiny_bert}"])
    if config.model.lwap_start == "native":  # the tiny BERT is a plain encoder: no pooling of its own
        config = load_config(path, [f"model.backbone={tiny_bert}", "model.native_pooling=mean"])
    m = config.model
    model = build_configured_model(m)
    loss = SimCSELoss(model, config.objective.temperature, config.objective.hard_negative_weight)
    assert loss.scale == pytest.approx(1 / config.objective.temperature)
    assert model.max_seq_length == min(m.max_seq_length, 128)  # the tiny BERT's 128 positions bound it


def test_paper_settings() -> None:
    """Each recipe as the papers' code trains it (the line each follows is cited in the config's header)."""
    import math

    for pooling in ("lwap", "cls"):
        unsup = load_config(REPO / f"configs/unsup-simcse-bert-base-{pooling}.yaml")
        t = unsup.training
        assert (unsup.model.backbone, t.per_device_batch_size, t.learning_rate, t.epochs) == (
            "bert-base-uncased",
            64,
            3e-5,
            1,
        )
        # SimCSE's run_unsup_example.sh: --eval_steps 125, --mlp_only_train
        assert (unsup.model.max_seq_length, unsup.objective.temperature, unsup.eval.eval_steps) == (
            32,
            0.05,
            125,
        )
        assert not unsup.model.mlp_at_inference
    for pooling in ("lwap", "cls"):
        sup = load_config(REPO / f"configs/sup-simcse-bert-base-{pooling}.yaml")
        assert (sup.objective.name, sup.training.learning_rate, sup.model.max_seq_length) == (
            "sup_simcse",
            2e-5,
            64,
        )
        assert (sup.training.epochs, sup.eval.eval_steps, sup.data.hard_negative_column) == (
            3,
            100,
            "hard_neg",
        )
        # LWAP's code adds 1.0 to each hard-negative logit: α = e, log α = 1; 4 × 64 = 256 candidates
        assert math.log(sup.objective.hard_negative_weight) == pytest.approx(1.0, abs=1e-12)
        assert (sup.training.per_device_batch_size, sup.training.mini_batch_size) == (256, 64)
        assert sup.model.pooling == pooling
    # supervised SimCSE keeps [CLS]'s MLP at inference (no --mlp_only_train in run_sup_example.sh)
    assert load_config(REPO / "configs/sup-simcse-bert-base-cls.yaml").model.mlp_at_inference


def test_overrides_and_yaml_floats(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(training={"learning_rate": "3e-5"}))
    config = load_config(
        path, ["training.per_device_batch_size=8", "training.precision=bf16", "data.max_examples=null"]
    )
    assert config.training.learning_rate == 3e-5  # PyYAML reads 3e-5 as a string; accepted as YAML 1.2 does
    assert (config.training.per_device_batch_size, config.training.precision) == (8, "bf16")
    assert config.data.max_examples is None


def test_dump_round_trips(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, minimal()))
    again = config_from_dict(yaml.safe_load(dump_config(config)))
    assert again == config and isinstance(again, TrainConfig)
    assert set(SECTIONS) == {f.name for f in dataclasses.fields(TrainConfig)}


def error_of(tmp_path: Path, raw: dict | str, overrides: tuple[str, ...] = ()) -> str:
    path = write(tmp_path, raw)
    with pytest.raises(ConfigError) as caught:
        load_config(path, list(overrides))
    return str(caught.value)


def test_unknown_key_names_file_key_and_close_matches(tmp_path: Path) -> None:
    message = error_of(tmp_path, minimal(training={"learnig_rate": 1e-4}))
    assert "c.yaml" in message and "'training.learnig_rate'" in message
    assert "training.learning_rate" in message
    misplaced = error_of(tmp_path, {**minimal(), "learning_rate": 1e-4})
    assert "training.learning_rate" in misplaced
    assert "training.learning_rate" in error_of(tmp_path, minimal(), ("training.learning_rat=1",))


@pytest.mark.parametrize(
    ("sections", "key", "expected"),
    [
        ({"training": {"per_device_batch_size": "64"}}, "training.per_device_batch_size", "integer"),
        ({"training": {"per_device_batch_size": 6.5}}, "training.per_device_batch_size", "integer"),
        ({"training": {"progress_bar": "yes please"}}, "training.progress_bar", "true or false"),
        ({"training": {"seed": True}}, "training.seed", "integer"),
        ({"training": {"fast_dropout": "yes"}}, "training.fast_dropout", "true or false"),
        ({"training": {"keep_freed_memory": 1}}, "training.keep_freed_memory", "true or false"),
        ({"training": {"learning_rate": "fast"}}, "training.learning_rate", "number"),
        ({"model": {"lwap_layers": 3}}, "model.lwap_layers", "list"),
        ({"model": {"backbone": 12}}, "model.backbone", "string"),
    ],
)
def test_wrong_type(tmp_path: Path, sections: dict, key: str, expected: str) -> None:
    message = error_of(tmp_path, minimal(**sections))
    assert key in message and expected in message


@pytest.mark.parametrize(
    ("sections", "key"),
    [
        ({"training": {"learning_rate": 0}}, "training.learning_rate"),
        ({"training": {"learning_rate": -1e-5}}, "training.learning_rate"),
        ({"training": {"per_device_batch_size": 0}}, "training.per_device_batch_size"),
        ({"objective": {"temperature": 0}}, "objective.temperature"),
        ({"objective": {"temperature": -0.05}}, "objective.temperature"),
        ({"objective": {"name": "sup_simcse", "hard_negative_weight": 0}}, "objective.hard_negative_weight"),
        ({"training": {"max_steps": 0}}, "training.max_steps"),
        ({"training": {"epochs": 0}}, "training.epochs"),
        ({"training": {"warmup_ratio": 1.5}}, "training.warmup_ratio"),
        ({"model": {"max_seq_length": 0}}, "model.max_seq_length"),
        ({"data": {"max_examples": 0}}, "data.max_examples"),
        ({"output": {"save_steps": 7}, "eval": {"eval_steps": 5}}, "output.save_steps"),
        ({"eval": {"dev": None, "keep_best": True}}, "eval.keep_best"),
        ({"training": {"length_group_size": 0}}, "training.length_group_size"),
        ({"training": {"attention": "flash"}}, "training.attention"),
        ({"training": {"batch_sampler": "by_length"}}, "training.batch_sampler"),
    ],
)
def test_impossible_values(tmp_path: Path, sections: dict, key: str) -> None:
    assert key in error_of(tmp_path, minimal(**sections))


def test_unknown_choices_list_the_valid_ones(tmp_path: Path) -> None:
    message = error_of(tmp_path, minimal(model={"pooling": "lwapp"}))
    assert "model.pooling" in message and "'lwap'" in message
    assert all(p in message for p in ("weighted", "cls", "mean", "first_last_avg", "last2_avg"))
    message = error_of(tmp_path, minimal(objective={"name": "simcse"}))
    assert "objective.name" in message and "unsup_simcse" in message and "sup_simcse" in message


def test_malformed_files(tmp_path: Path) -> None:
    assert "empty" in error_of(tmp_path, "")
    assert "c.yaml: line 3: invalid YAML" in error_of(tmp_path, "model:\n  backbone: b\n   pooling: x: y\n")
    assert "missing required key 'model.pooling'" in error_of(
        tmp_path, minimal(model={"pooling": None}) | {"model": {"backbone": "b"}}
    )
    assert "section 'training' must be a mapping" in error_of(tmp_path, {**minimal(), "training": [1, 2]})
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.yaml")


def test_cli_reports_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, minimal(training={"learning_rate": -1}))
    assert main(["train", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lwap train: error:") and "training.learning_rate" in err[0]
    assert main(["train", str(path), "--set", "nonsense"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
