"""The pooler registry (lwap.registry): one table behind config checks and build_model; module homes."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from conftest import REPO, SENTENCES
from safetensors.torch import load_file

from lwap import build_model, load_model, registry
from lwap.errors import ConfigError, LwapError
from lwap.module_io import SafetensorsModule
from lwap.train.config import ModelConfig, all_keys, load_config

MINIMAL = {
    "output": {"dir": "out"},
    "model": {"backbone": "b", "pooling": "lwap"},
    "data": {"train": "x.txt"},
    "objective": {"name": "unsup_simcse"},
}


def config_error(tmp_path: Path, **model: object) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL, "model": {**MINIMAL["model"], **model}}), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value)


def test_option_names_are_unique_across_poolers() -> None:
    listed = [option.name for pooler in registry.POOLERS.values() for option in pooler.options]
    assert len(listed) == len(set(listed)) == len(registry.OPTIONS)
    assert registry.POOLINGS == (
        "lwap",
        "weighted",
        "cls",
        "mean",
        "max",
        "first_last_avg",
        "last2_avg",
        "all_levels_avg",
    )


def test_model_config_has_a_field_per_option_with_its_type_and_default() -> None:
    fields = {f.name: f for f in dataclasses.fields(ModelConfig)}
    config = ModelConfig(backbone="b", pooling="lwap")
    for name, option in registry.OPTIONS.items():
        assert f"model.{name}" in all_keys()
        assert fields[name].type == option.type and getattr(config, name) == option.default
    assert config.pooler_options() == {name: o.default for name, o in registry.OPTIONS.items()}


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ({"pooling": "lwapp"}, "model.pooling: unknown value 'lwapp' (did you mean 'lwap'?)"),
        (
            {"score_scale": "sqrt_hiden"},
            "model.score_scale: unknown value 'sqrt_hiden' (did you mean 'sqrt_hidden'?)",
        ),
        ({"lwap_layers": [0, -1]}, "model.lwap_layers must hold values of at least 0, got [0, -1]"),
        ({"weighted_layer_start": -1}, "model.weighted_layer_start must be at least 0, got -1"),
        ({"lwap_queries": "latnet"}, "model.lwap_queries: unknown value 'latnet' (did you mean 'latent'?)"),
        (
            {"lwap_output": "attentoin"},
            "model.lwap_output: unknown value 'attentoin' (did you mean 'attention'?)",
        ),
        ({"lwap_latent_queries": 0}, "model.lwap_latent_queries must be at least 1, got 0"),
    ],
)
def test_config_reports_registry_checks_with_file_and_key(tmp_path: Path, model: dict, expected: str) -> None:
    message = config_error(tmp_path, **model)
    assert message.startswith(str(tmp_path / "c.yaml")) and expected in message


def test_build_model_checks_pooling_and_options_before_loading_the_backbone(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-backbone")  # never read: the options fail first
    with pytest.raises(ConfigError, match="score_scale: unknown value 'bogus'"):
        build_model(missing, "lwap", score_scale="bogus")
    with pytest.raises(ConfigError, match="unknown pooler option 'lwap_layer'"):
        build_model(missing, "lwap", lwap_layer=[1])
    with pytest.raises(ConfigError, match="pooling: unknown value 'maxx'"):
        build_model(missing, "maxx")


def test_backbone_dependent_checks_name_the_option() -> None:
    small = registry.Backbone(hidden_size=8, num_layers=2)
    with pytest.raises(ConfigError, match=r"lwap_layers: .*0\.\.2"):
        registry.build_head("lwap", small, lwap_layers=[3])
    with pytest.raises(ConfigError, match=r"weighted_layer_start must be in 0\.\.2"):
        registry.build_head("weighted", small, weighted_layer_start=3)


def test_options_reach_the_module(tiny_bert: Path) -> None:
    model = build_model(str(tiny_bert), "lwap", lwap_layers=[1, 2], score_scale="sqrt_hidden")
    assert (model[1].layers, model[1].score_scale) == ([1, 2], "sqrt_hidden")
    assert (model[1].queries, model[1].output_from) == ("cls", "cls_concat")  # the paper, by default
    variant = {"lwap_queries": "latent", "lwap_latent_queries": 3, "lwap_output": "attention"}
    head = build_model(str(tiny_bert), "lwap", **variant)[1]
    assert (head.queries, head.latent_queries, head.output_from) == ("latent", 3, "attention")
    assert head.latent.shape == (3, 32)
    assert build_model(str(tiny_bert), "weighted", weighted_layer_start=1)[1].layer_start == 1


def test_config_typo_is_reported_before_torch_is_imported(tmp_path: Path) -> None:
    """`lwap train` with a bad pooling fails in well under a second: no torch, no transformers."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(MINIMAL), encoding="utf-8")
    script = (
        "import sys\nfrom lwap.cli import main\n"
        f"assert main(['train', {str(path)!r}, '--set', 'model.pooling=typo']) == 2\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "model.pooling: unknown value 'typo'" in done.stderr


def test_every_lwap_module_saves_through_the_safetensors_base() -> None:
    from lwap import LayerMean, LayerwiseAttentionPooling, TrainingOnlyMLP

    for cls in (LayerwiseAttentionPooling, LayerMean, TrainingOnlyMLP):
        assert issubclass(cls, SafetensorsModule)
        assert "save" not in vars(cls) and "load" not in vars(cls)


def test_training_only_mlp_weights_as_pickle_are_refused(tiny_bert: Path, tmp_path: Path) -> None:
    build_model(str(tiny_bert), "cls").save(str(tmp_path / "m"))
    head = tmp_path / "m" / "2_TrainingOnlyMLP"
    torch.save(load_file(head / "model.safetensors"), head / "pytorch_model.bin")
    (head / "model.safetensors").unlink()
    with pytest.raises(LwapError, match="safetensors only"):
        load_model(tmp_path / "m")


# what modules.json named before the self-contained layout (lwap.portable): the import path, and before
# the modules got their own files, their old homes
OLD_LAYOUTS = {
    "import path": {
        "layerwise_attention.LayerwiseAttentionPooling": "lwap.layerwise_attention.LayerwiseAttentionPooling",
        "layer_mean.LayerMean": "lwap.layer_mean.LayerMean",
        "training_only_mlp.TrainingOnlyMLP": "lwap.training_only_mlp.TrainingOnlyMLP",
    },
    "old homes": {
        "layerwise_attention.LayerwiseAttentionPooling": "lwap.pooling.LayerwiseAttentionPooling",
        "layer_mean.LayerMean": "lwap.poolers.LayerMean",
        "training_only_mlp.TrainingOnlyMLP": "lwap.poolers.TrainingOnlyMLP",
    },
}


@pytest.mark.parametrize("layout", list(OLD_LAYOUTS))
@pytest.mark.parametrize("pooling", ["lwap", "cls", "first_last_avg"])
def test_models_saved_under_the_old_module_names_still_load(
    pooling: str, layout: str, tiny_bert: Path, tmp_path
) -> None:
    """Folders saved by earlier lwap versions name lwap's classes by import path, without their code."""
    model = build_model(str(tiny_bert), pooling).eval()
    model.save(str(tmp_path / "m"))
    modules_json = tmp_path / "m" / "modules.json"
    entries = json.loads(modules_json.read_text(encoding="utf-8"))
    old_names = OLD_LAYOUTS[layout]
    new = [e["type"] for e in entries if not e["type"].startswith("sentence_transformers.")]
    assert new and set(new) <= set(old_names)  # new saves name the file in the folder
    for entry in entries:
        entry["type"] = old_names.get(entry["type"], entry["type"])
    modules_json.write_text(json.dumps(entries), encoding="utf-8")
    for code in tmp_path.joinpath("m").glob("*.py"):
        code.unlink()
    loaded = load_model(tmp_path / "m")
    assert [type(m) for m in loaded] == [type(m) for m in model]
    assert np.array_equal(loaded.encode(SENTENCES), model.encode(SENTENCES))


def test_readme_pooler_table_lists_every_registered_pooler() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in registry.POOLINGS:
        assert f"| `{name}` |" in readme


ENTRY_CASES = [(name, {}) for name in registry.POOLINGS] + [
    ("lwap", {"lwap_start": "native", "native_pooling": "mean", "lwap_level_norm": "all"}),
    ("cls", {"mlp_at_inference": True}),
]


@pytest.mark.parametrize(("pooling", "options"), ENTRY_CASES)
def test_an_entry_names_the_modules_it_builds_and_whether_they_learn(
    tiny_bert: Path, pooling: str, options: dict
) -> None:
    """What the rest of lwap reads from an entry (portable's classes, the exports, the depth rules, the head's
    learning rate) is what `build_model` places."""
    pooler = registry.POOLERS[pooling]
    head = list(build_model(str(tiny_bert), pooling, **options))[1:]
    placed = {registry.module_class(path) for path in pooler.placed()}
    assert {type(module) for module in head} <= placed
    assert any(any(True for _ in module.parameters()) for module in head) == pooler.parameters


def test_every_pooler_has_a_name_of_its_own_on_the_card() -> None:
    names = [pooler.card_name for pooler in registry.POOLERS.values()]
    assert all(names) and len(set(names)) == len(names)


def test_the_package_exports_lwaps_module_classes_and_type_checkers_see_every_export() -> None:
    import ast

    import lwap

    for path in registry.LWAP_MODULES:
        cls = registry.module_class(path)
        assert getattr(lwap, cls.__name__) is cls and issubclass(cls, SafetensorsModule)
    tree = ast.parse((REPO / "lwap" / "__init__.py").read_text(encoding="utf-8"))
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
    )
    typed = {alias.name for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert typed == set(lwap.__all__)


def test_max_pooler_trains_saves_loads_without_lwap_is_cut_to_k_layers_and_carded(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A pooler added as one registry entry (`max`) goes everywhere the others go: `lwap train` (here with
    depth-elastic training), a folder plain sentence-transformers loads, `lwap truncate` and
    `lwap encode --layers`, the card."""
    from sentence_transformers import SentenceTransformer
    from test_train_run import tiny_config

    from lwap.cli import main
    from lwap.truncate import truncate_model

    path = tiny_config(
        tmp_path, tiny_bert, model={"pooling": "max"}, training={"max_steps": 2}, objective={"depths": [2, 5]}
    )
    assert main(["train", str(path)]) == 0
    folder = tmp_path / "run" / "model"
    types = [entry["type"] for entry in json.loads((folder / "modules.json").read_text(encoding="utf-8"))]
    assert all(t.startswith("sentence_transformers.") for t in types) and not list(folder.glob("*.py"))
    plain = SentenceTransformer(str(folder))  # no lwap module, so no trust_remote_code
    assert plain[1].pooling_mode == "max"
    model = load_model(folder)
    np.testing.assert_allclose(plain.encode(SENTENCES), model.encode(SENTENCES), atol=1e-6)
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert f"# {tiny_bert} + max pooling, unsupervised SimCSE" in card and "max-pooling" in card
    assert "--layers 2" in card  # the elastic section: trained at depth 2

    expected = truncate_model(model, 2).encode(SENTENCES)
    assert main(["truncate", str(folder), str(tmp_path / "small"), "--layers", "2"]) == 0
    small = SentenceTransformer(str(tmp_path / "small"))
    assert small[0].auto_model.config.num_hidden_layers == 2
    np.testing.assert_allclose(small.encode(SENTENCES), expected, atol=1e-6)
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    out = tmp_path / "out.npy"
    command = ["encode", str(folder), "--input", str(tmp_path / "in.txt"), "--output", str(out)]
    assert main([*command, "--layers", "2", "--no-progress"]) == 0
    np.testing.assert_allclose(np.load(out), expected, atol=1e-5)
    assert (np.abs(expected - model.encode(SENTENCES)).max()) > 1e-3  # depth 2 is another vector
    capsys.readouterr()
