"""Saved models are self-contained: they load and encode identically where lwap is not installed.

The folder carries lwap's module files (lwap.portable); lwap's own loader compares their code with its
own and a changed file is refused; sentence-transformers' multi-process encoding works for every pooler.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import SENTENCES
from sentence_transformers import SentenceTransformer
from test_train_run import tiny_config

from lwap import build_model, load_model
from lwap.cli import main
from lwap.errors import ModelLoadError
from lwap.portable import code_files, folder_type
from lwap.registry import POOLERS, POOLINGS
from lwap.train import load_config, train

PLAIN_SCRIPT = """
import json, sys
import numpy as np
try:
    import lwap
except ImportError:
    pass
else:
    sys.exit(f"lwap is importable here: {lwap.__file__}")
from sentence_transformers import SentenceTransformer

if __name__ == "__main__":
    folders, sentences, out = sys.argv[1].split(","), json.loads(sys.argv[2]), sys.argv[3]
    for i, folder in enumerate(folders):
        model = SentenceTransformer(folder, trust_remote_code=True)
        np.save(f"{out}/{i}.npy", model.encode(sentences))
        if i == 0:  # sentence-transformers' multi-process encoding, without lwap
            np.save(f"{out}/{i}-two-workers.npy", model.encode(sentences, device=["cpu", "cpu"]))
"""


def _fresh_venv_without_lwap(where: Path) -> Path:
    """A new venv holding only torch and sentence-transformers (and what they need), installed by pip.

    The versions are pinned to this environment's, so pip takes them from its cache or the local wheels.
    """
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pins = where / "constraints.txt"
    pins.write_text(
        "\n".join(
            f"{dist.metadata['Name']}=={dist.version}"
            for dist in metadata.distributions()
            if dist.metadata["Name"] and dist.metadata["Name"].lower() != "lwap"
        ),
        encoding="utf-8",
    )
    wanted = [f"{name}=={metadata.version(name)}" for name in ("torch", "sentence-transformers")]
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-c", str(pins), *wanted]
    started = time.perf_counter()
    done = subprocess.run(pip, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"fresh venv: pip install took {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return venv / "bin" / "python"


@pytest.mark.slow
def test_trained_and_hub_ready_models_load_without_lwap(tmp_path: Path, tiny_bert: Path) -> None:
    """A model trained by `lwap train`, and the folder `push_to_hub` would upload, in a venv without lwap."""
    native = {"lwap_start": "native", "native_pooling": "mean"}
    config = tiny_config(tmp_path, tiny_bert, training={"max_steps": 4}, model=native)
    train(load_config(config))
    trained = tmp_path / "run" / "model"
    hub_ready = tmp_path / "hub-upload"
    # push_to_hub's local step, without the upload: sentence-transformers saves into a temporary folder so
    load_model(trained).save(str(hub_ready), model_name="someone/lwap-tiny", create_model_card=True)
    others = {}
    variant = {"lwap_queries": "latent", "lwap_output": "attention"}
    for name, pooling, options in (  # the other lwap module files, and LWAP's variants
        ("first_last_avg", "first_last_avg", {}),
        ("cls", "cls", {}),
        ("lwap-latent", "lwap", variant),
    ):
        others[name] = tmp_path / name
        build_model(str(tiny_bert), pooling, **options).save(str(others[name]))
    folders = [trained, hub_ready, *others.values()]
    expected = [load_model(folder).encode(SENTENCES) for folder in folders]

    python = _fresh_venv_without_lwap(tmp_path)
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT, encoding="utf-8")
    out = tmp_path / "embeddings"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf-home"), OMP_NUM_THREADS="1")
    command = [str(python), str(script), ",".join(map(str, folders)), json.dumps(SENTENCES), str(out)]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for i, embeddings in enumerate(expected):
        np.testing.assert_allclose(np.load(out / f"{i}.npy"), embeddings, atol=1e-6, rtol=0)
    np.testing.assert_allclose(np.load(out / "0-two-workers.npy"), expected[0], atol=1e-6, rtol=0)
    card = (hub_ready / "README.md").read_text(encoding="utf-8")
    assert 'SentenceTransformer("someone/lwap-tiny", trust_remote_code=True)' in card


def test_saved_folder_carries_the_shipped_module_code(tiny_bert: Path, tmp_path: Path) -> None:
    build_model(str(tiny_bert), "lwap").save(str(tmp_path / "m"))
    entries = json.loads((tmp_path / "m" / "modules.json").read_text(encoding="utf-8"))
    assert entries[1]["type"] == "layerwise_attention.LayerwiseAttentionPooling"
    from lwap.layerwise_attention import LayerwiseAttentionPooling

    shipped = code_files(LayerwiseAttentionPooling)
    names = {"layerwise_attention.py", "module_io.py", "lwap_choices.py", "worker_pickling.py"}
    assert {p.name for p in shipped} == names
    for source in shipped:
        assert (tmp_path / "m" / source.name).read_bytes() == source.read_bytes()
        text = source.read_text(encoding="utf-8")
        assert "from lwap" not in text and "import lwap" not in text  # runs where lwap is not installed


def test_changed_module_code_is_refused(tiny_bert: Path, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "m"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    code = folder / "module_io.py"
    code.write_text(code.read_text(encoding="utf-8") + "\nimport os  # anything at all\n", encoding="utf-8")
    with pytest.raises(ModelLoadError, match=r"module_io\.py differs from"):
        load_model(folder)
    (folder / "sentences.txt").write_text("\n".join(SENTENCES), encoding="utf-8")
    sentences, embeddings = str(folder / "sentences.txt"), str(tmp_path / "e.npy")
    command = ["encode", str(folder), "--input", sentences, "--output", embeddings]
    capsys.readouterr()  # what building the model printed
    assert main(command) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "differs from" in err[0]
    code.unlink()
    with pytest.raises(ModelLoadError, match=r"module_io\.py is missing"):
        load_model(folder)


def test_comment_and_docstring_edits_are_not_code_changes(tiny_bert: Path, tmp_path: Path) -> None:
    """A folder saved before a comment or docstring of lwap's module files changed still loads."""
    folder = tmp_path / "m"
    model = build_model(str(tiny_bert), "lwap").eval()
    model.save(str(folder))
    code = folder / "layerwise_attention.py"
    text = code.read_text(encoding="utf-8")
    older = "# a comment\n" + text.replace('"""Layer-wise', '"""An older docstring of layer-wise', 1)
    code.write_text(older, encoding="utf-8")
    assert code.read_text(encoding="utf-8") != text
    np.testing.assert_allclose(load_model(folder).encode(SENTENCES), model.encode(SENTENCES), atol=1e-6)
    code.write_text(text.replace("dim=-1)", "dim=1)", 1), encoding="utf-8")  # one argument changed
    with pytest.raises(ModelLoadError, match=r"layerwise_attention\.py differs from"):
        load_model(folder)


def test_folder_saved_by_the_earlier_module_code_loads_with_todays_class(
    tiny_bert: Path, tmp_path: Path
) -> None:
    """A folder saved before the query and output variants: its config has none of their keys and its
    code files are the ones that lwap shipped. lwap loads it with today's class at their defaults (the
    paper's head), which embeds as that folder's own code does, run by sentence-transformers alone."""
    from lwap.portable import EARLIER_CODE

    folder = tmp_path / "m"
    build_model(str(tiny_bert), "lwap", lwap_layers=[1, 3, 5], score_scale="sqrt_hidden").save(str(folder))
    for earlier in sorted(EARLIER_CODE.glob("f88fd41/*.txt")):
        (folder / earlier.name.removesuffix(".txt")).write_bytes(earlier.read_bytes())
    config = folder / "1_LayerwiseAttentionPooling" / "config.json"
    saved = json.loads(config.read_text(encoding="utf-8"))
    old = {key: saved[key] for key in ("hidden_size", "num_hidden_states", "layers", "score_scale", "start")}
    config.write_text(json.dumps(old), encoding="utf-8")
    assert "latent_queries" not in (folder / "layerwise_attention.py").read_text(encoding="utf-8")

    own_code = SentenceTransformer(str(folder), trust_remote_code=True)  # the folder's (earlier) code
    assert type(own_code[1]).__module__ != "lwap.layerwise_attention"
    model = load_model(folder)
    assert type(model[1]).__module__ == "lwap.layerwise_attention"
    head = model[1]
    assert (head.queries, head.output_from, head.layers) == ("cls", "cls_concat", [1, 3, 5])
    assert np.array_equal(model.encode(SENTENCES), own_code.encode(SENTENCES))
    trained = []  # in training too: the same random draws (dropout, RReLU slopes) in the same order
    for each in (own_code, model):
        torch.manual_seed(0)
        trained.append(each.train()(each.preprocess(SENTENCES))["sentence_embedding"])
    assert torch.equal(*trained)
    code = folder / "layerwise_attention.py"  # a change to the earlier code is still refused
    code.write_text(code.read_text(encoding="utf-8").replace("dim=-1)", "dim=1)", 1), encoding="utf-8")
    with pytest.raises(ModelLoadError, match=r"layerwise_attention\.py differs from"):
        load_model(folder)


def test_unknown_file_module_is_refused(tiny_bert: Path, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    listing = folder / "modules.json"
    entries = json.loads(listing.read_text(encoding="utf-8"))
    entries[1]["type"] = "custom_st.LayerwiseAttentionPooling"
    listing.write_text(json.dumps(entries), encoding="utf-8")
    with pytest.raises(ModelLoadError, match=r"custom_st\.LayerwiseAttentionPooling"):
        load_model(folder)


def test_folder_types_name_the_file_and_class() -> None:
    from lwap import LayerMean, LayerwiseAttentionPooling, TrainingOnlyMLP

    assert folder_type(LayerMean) == "layer_mean.LayerMean"
    assert folder_type(TrainingOnlyMLP) == "training_only_mlp.TrainingOnlyMLP"
    assert folder_type(LayerwiseAttentionPooling) == "layerwise_attention.LayerwiseAttentionPooling"


# one pooler per set of module classes it places (what a worker unpickles; about 10 s of processes each),
# and the latent queries, whose learned parameter the others lack
BY_MODULES = list({POOLERS[name].placed(): name for name in reversed(POOLINGS)}.values())[::-1]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pooling", "options"),
    [(pooling, {}) for pooling in BY_MODULES]
    + [("lwap", {"lwap_queries": "latent", "lwap_output": "attention"})],
    ids=[*BY_MODULES, "lwap-latent-attention"],
)
def test_two_worker_processes_encode_as_one(
    pooling: str, options: dict, tiny_bert: Path, tmp_path: Path
) -> None:
    """sentence-transformers' multi-process encoding of a saved and reloaded model, after a forward in this
    process (transformers installs its output hooks then: the model must still pickle)."""
    build_model(str(tiny_bert), pooling, **options).save(str(tmp_path / "m"))
    model = load_model(tmp_path / "m")
    expected = model.encode(SENTENCES)
    np.testing.assert_allclose(model.encode(SENTENCES, device=["cpu", "cpu"]), expected, atol=1e-6, rtol=0)


@pytest.mark.slow
def test_a_pool_of_two_workers_serves_a_built_model(tiny_bert: Path) -> None:
    model = build_model(str(tiny_bert), "lwap").eval()
    pool = model.start_multi_process_pool(["cpu", "cpu"])  # before any forward here
    try:
        first = model.encode(SENTENCES, pool=pool)
        np.testing.assert_allclose(first, model.encode(SENTENCES), atol=1e-6, rtol=0)
        np.testing.assert_allclose(model.encode(SENTENCES * 3, pool=pool, chunk_size=2)[:4], first, atol=1e-6)
    finally:
        model.stop_multi_process_pool(pool)
