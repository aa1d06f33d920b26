"""Hostile and damaged folders (issue 39, docs/RELIABILITY.md "Hostile and damaged files"): a folder crafted
to run its own code, to be unpickled, or to read outside itself gives one line and exit 2 from every
command that reads it, with no prompt and nothing executed; every load lwap makes says `trust_remote_code`."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SENTENCES, SIDE_BY_SIDE
from hostile import CRAFTS, MARKER, SAYS

from lwap.errors import BackboneNotFoundError, ConfigError, LwapError, ModelLoadError

# every call that loads a model, config, tokenizer or module classes from a name or folder
LOADS = ("from_pretrained", "SentenceTransformer", "CrossEncoder", "SparseEncoder", "Transformer")
LOAD_METHODS = ("_load_with_module_classes",)
SCANNED = ("lwap", "train", "eval", "compare", "benchmarks")


@pytest.fixture(scope="module")
def tiny_lwap(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lwap import build_model

    folder = tmp_path_factory.mktemp("hostile") / "tiny-lwap"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    return folder


@pytest.fixture(autouse=True)
def no_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdin closed, as in the subprocess tests: a prompt (transformers' "run the custom code? [y/N]")
    reads EOF and fails the test instead of waiting."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


def crafted(source: Path, tmp_path: Path, craft: str) -> Path:
    folder = tmp_path / craft / source.name
    shutil.copytree(source, folder)
    CRAFTS[craft](folder)
    return folder


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text.strip(), text
    return text


@pytest.mark.parametrize("craft", sorted(CRAFTS))
def test_load_model_refuses_every_crafted_folder(craft: str, tiny_lwap: Path, tmp_path: Path) -> None:
    from lwap import load_model

    folder = crafted(tiny_lwap, tmp_path, craft)
    with pytest.raises(ModelLoadError) as refused:
        load_model(folder)
    line = one_line(refused.value)
    assert re.search(SAYS[craft], line) and str(folder) in line, line
    assert not (folder / MARKER).exists(), "the folder's code ran"


@pytest.mark.parametrize("craft", sorted(CRAFTS))
def test_training_backbone_refuses_every_crafted_folder(craft: str, tiny_bert: Path, tmp_path: Path) -> None:
    """A plain Hugging Face backbone crafted the same ways: `lwap train`'s check and `build_model`."""
    from lwap import build_model
    from lwap.backbones import check_backbone

    folder = crafted(tiny_bert, tmp_path, craft)
    for load in (check_backbone, lambda f: build_model(f, "mean")):
        with pytest.raises(BackboneNotFoundError) as refused:
            load(str(folder))
        line = one_line(refused.value)
        assert re.search(SAYS[craft], line) and str(folder) in line, line
    assert not (folder / MARKER).exists(), "the folder's code ran"


def test_router_routes_are_read_recursively(tiny_lwap: Path, tmp_path: Path) -> None:
    """A Router inside a Router, the inner one routing to the folder's code; and a route path that leaves."""
    from lwap import load_model

    folder = crafted(tiny_lwap, tmp_path, "router-code")
    outer = folder / "1_Router"
    inner_config = json.loads((outer / "router_config.json").read_text())
    (outer / "query_0_Inner").mkdir()
    shutil.move(outer / "router_config.json", outer / "query_0_Inner" / "router_config.json")
    outer_config = {
        "types": {"query_0_Inner": "sentence_transformers.sentence_transformer.modules.Router"},
        "structure": {"query": ["query_0_Inner"], "document": ["query_0_Inner"]},
        "parameters": {"default_route": "query", "allow_empty_key": True},
    }
    (outer / "router_config.json").write_text(json.dumps(outer_config))
    (outer / "query_0_Inner" / "query_0_Evil").mkdir()
    with pytest.raises(
        ModelLoadError, match=r"query_0_Inner/router_config\.json names module classes outside"
    ):
        load_model(folder)
    inner_config["types"] = {"../../..": "sentence_transformers.sentence_transformer.modules.Pooling"}
    (outer / "query_0_Inner" / "router_config.json").write_text(json.dumps(inner_config))
    with pytest.raises(ModelLoadError, match=r"module path '\.\./\.\./\.\.' leaves the model folder"):
        load_model(folder)
    inner_config["types"] = {"": "sentence_transformers.sentence_transformer.modules.Router"}
    (outer / "query_0_Inner" / "router_config.json").write_text(json.dumps(inner_config))
    with pytest.raises(ModelLoadError, match=r"module path '' leads back to a Router already read"):
        load_model(folder)  # a Router routing to itself: sentence-transformers would recurse forever
    assert not (folder / MARKER).exists()


def test_a_link_out_of_the_folder_is_refused(tiny_lwap: Path, tmp_path: Path) -> None:
    from lwap import load_model

    folder = tmp_path / "m"
    shutil.copytree(tiny_lwap, folder)
    head = folder / "1_LayerwiseAttentionPooling"
    shutil.move(head, tmp_path / "outside")
    head.symlink_to(tmp_path / "outside")
    with pytest.raises(ModelLoadError, match="is a link out of the model folder"):
        load_model(folder)


def test_trust_remote_code_lifts_only_the_code_checks(tiny_bert: Path, tmp_path: Path) -> None:
    """The opt-in lets auto_map and foreign classes through (the folder's code is then the user's call);
    a pickle or a path out of the folder stays refused."""
    from lwap.checks.model_folder import check_model_folder

    check_model_folder(crafted(tiny_bert, tmp_path, "auto-map"), trust_remote_code=True)
    for craft in ("pickle-weights", "path-escape"):
        with pytest.raises(ModelLoadError, match=SAYS[craft]):
            check_model_folder(crafted(tiny_bert, tmp_path, craft), trust_remote_code=True)


def test_half_a_modules_json_names_file_and_line(tiny_lwap: Path, tmp_path: Path) -> None:
    from hostile import craft_half_json

    from lwap import load_model

    folder = tmp_path / "m"
    shutil.copytree(tiny_lwap, folder)
    craft_half_json(folder / "modules.json")
    with pytest.raises(ModelLoadError, match=r"modules\.json: line \d+, column \d+: not valid JSON"):
        load_model(folder)


# --- every load says trust_remote_code ----------------------------------------------------------------


def _loads_without_trust(path: Path) -> list[str]:
    """`file:line call` for each load call in `path` that does not pass trust_remote_code explicitly.

    A load is a call of from_pretrained, SentenceTransformer/CrossEncoder/SparseEncoder, Transformer or
    `_load_with_module_classes` (attribute or name); building from modules (`modules=[...]`, no path) loads
    nothing. The call's own text must mention trust_remote_code (a keyword, or in the kwargs it passes).
    """
    source = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in LOADS and name not in LOAD_METHODS:
            continue
        if name != "from_pretrained" and not node.args and any(k.arg == "modules" for k in node.keywords):
            continue  # SentenceTransformer(modules=[...]): built, not loaded
        text = ast.get_source_segment(source, node) or ""
        if "trust_remote_code" not in text:
            where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
            found.append(f"{where}:{node.lineno} {text.splitlines()[0]}")
    return found


def test_every_load_passes_trust_remote_code_explicitly() -> None:
    """No load lwap makes leaves trust_remote_code to transformers' default, which asks on a prompt."""
    files = [p for folder in SCANNED for p in sorted((REPO / folder).rglob("*.py"))]
    assert len(files) > 50
    offending = [hit for path in files for hit in _loads_without_trust(path)]
    assert not offending, "loads without an explicit trust_remote_code:\n" + "\n".join(offending)


def test_the_trust_scan_finds_a_load_without_it(tmp_path: Path) -> None:
    """The scan is not vacuous: it flags an AutoConfig load like the one issue 39 found, and passes the
    fixed one and a model built from modules."""
    path = tmp_path / "probe.py"
    path.write_text(
        "AutoConfig.from_pretrained(source)\n"
        "AutoConfig.from_pretrained(source, trust_remote_code=False)\n"
        "SentenceTransformer(modules=[a, b])\n"
        "SentenceTransformer(path)\n",
        encoding="utf-8",
    )
    hits = _loads_without_trust(path)
    assert [hit.split(" ", 1)[0].rsplit(":", 1)[1] for hit in hits] == ["1", "4"]


# --- hostile values -----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [-1, 2**32, 10**30])
def test_seed_outside_numpys_range_is_a_config_error(seed: int, tmp_path: Path) -> None:
    from test_train_run import tiny_config

    from lwap.train import load_config

    path = tiny_config(tmp_path, tmp_path / "backbone", training={"seed": seed})
    with pytest.raises(ConfigError, match=r"training\.seed must be between 0 and 4294967295"):
        load_config(path)


def test_output_names_over_the_file_systems_limit(tmp_path: Path, tiny_lwap: Path, capfd) -> None:
    """`output.dir` and `lwap encode --output`/`lwap eval --output` with a 300-byte name: one line, exit 2."""
    from test_train_run import tiny_config

    from lwap.cli import main
    from lwap.train import load_config

    long_name = "x" * 300
    path = tiny_config(tmp_path, tmp_path / "backbone", output={"dir": str(tmp_path / long_name / "run")})
    with pytest.raises(ConfigError, match=r"output\.dir the name 'x{20}…x{12}' is 300 bytes, longer than"):
        load_config(path)
    text = tmp_path / "in.txt"
    text.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    argv = ["encode", str(tiny_lwap), "--input", str(text), "--output", str(tmp_path / f"{long_name}.npy")]
    assert main(argv) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0 and "longer than the file system allows" in err, err


def test_encode_refuses_an_existing_output_without_overwrite(tmp_path: Path, tiny_lwap: Path, capfd) -> None:
    """As `lwap train` refuses a finished run: the existing file is kept; --overwrite replaces it."""
    import numpy as np

    from lwap.cli import main

    text = tmp_path / "in.txt"
    text.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    out = tmp_path / "out.npy"
    out.write_bytes(b"someone's earlier embeddings")
    argv = ["encode", str(tiny_lwap), "--input", str(text), "--output", str(out), "--no-progress"]
    assert main(argv) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{out} already exists" in err and "--overwrite" in err, err
    assert out.read_bytes() == b"someone's earlier embeddings"
    assert main([*argv, "--overwrite"]) == 0
    assert np.load(out).shape == (len(SENTENCES), 32)


# --- every command, in a process of its own with stdin closed -----------------------------------------


def _commands(folder: Path, world: Path) -> dict[str, list[str]]:
    """argv of every command that reads `folder` (a crafted model folder) and valid inputs elsewhere."""
    text = world / "in.txt"
    text.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    run = world / "run"
    shutil.copytree(folder, run / "model", symlinks=True)
    config = {
        "output": {"dir": str(world / "train-out")},
        "model": {"backbone": str(folder), "pooling": "mean", "max_seq_length": 16},
        "data": {"train": str(text)},
        "objective": {"name": "unsup_simcse"},
        "training": {"max_steps": 1, "per_device_batch_size": 2, "progress_bar": False},
        "eval": {"dev": None, "keep_best": False, "before_training": False},
    }
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (run / "train_summary.json").write_text(json.dumps({"steps": 1}), encoding="utf-8")
    (world / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return {
        "encode": ["encode", str(folder), "--input", str(text), "--output", str(world / "o.npy")],
        "eval": ["eval", str(folder), "--tasks", "stsb", "--no-progress"],
        "card": ["card", str(run)],
        "train": ["train", str(world / "config.yaml")],
        "compare": [
            *("compare", "run", "--results", str(world / "grid"), "--regime", "unsup"),
            *("--backbone", str(folder), "--poolers", "mean", "--seeds", "0"),
        ],
    }


@pytest.mark.slow
@pytest.mark.parametrize("craft", ["auto-map"])  # the prompt case; every craft: the path matrix
def test_every_command_refuses_with_stdin_closed(craft: str, tiny_lwap: Path, tmp_path: Path) -> None:
    """The payload folders through each command in a process of its own, stdin at /dev/null (a prompt
    would read EOF and end in a traceback): exit 2, one line naming the folder, the payload never ran."""
    folder = crafted(tiny_lwap, tmp_path, craft)
    env = {
        **os.environ,
        "LWAP_DATA_DIR": os.environ.get("LWAP_DATA_DIR", str(REPO.parent / "shared" / "data")),
    }
    commands = _commands(folder, tmp_path)

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "lwap", *argv],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    with ThreadPoolExecutor(max_workers=SIDE_BY_SIDE) as pool:  # each its own output
        outcomes = dict(zip(commands, pool.map(run, commands.values()), strict=True))
    for command, done in outcomes.items():
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1, f"{command}: exit {done.returncode}\n{done.stderr}"
        assert lines[0].startswith(f"lwap {command}: error: ") and re.search(SAYS[craft], lines[0]), lines[0]
        assert str(tmp_path) in lines[0], lines[0]
        assert "[y/N]" not in done.stdout + done.stderr
    assert not list(tmp_path.rglob(MARKER)), "the folder's code ran in one of the commands"


def test_lwap_error_is_the_base(tiny_lwap: Path, tmp_path: Path) -> None:
    """Library callers catch one type: every refusal is an LwapError."""
    from lwap import load_model

    with pytest.raises(LwapError):
        load_model(crafted(tiny_lwap, tmp_path, "path-escape"))


# --- files read back: one helper, the file and the line -----------------------------------------------


def test_readers_name_file_and_line(tmp_path: Path) -> None:
    """lwap.checks.files' readers, which every JSON/YAML/CSV lwap reads back goes through."""
    from lwap.checks.files import read_csv_rows, read_json, read_yaml
    from lwap.errors import DataError

    cell = tmp_path / "cell.json"
    cell.write_text(json.dumps({"pooler": "lwap", "scores": {"a": 1.0, "b": 2.0}}, indent=2)[:40])
    with pytest.raises(DataError, match=r"cell\.json: line 4, column 5: not valid JSON .*truncated\?"):
        read_json(cell)
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  backbone: b\n   pooling: x: y\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"config\.yaml: line 3: invalid YAML"):
        read_yaml(config)
    metrics = tmp_path / "metrics.csv"
    metrics.write_text("step,epoch,metric,value\n1,0.1,loss,2.5\n2,0.2,lo", encoding="utf-8")
    with pytest.raises(DataError, match=r"metrics\.csv: line 3: 3 fields, the header has 4"):
        read_csv_rows(metrics)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{\n"a": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"latin\.json: line 2: not valid UTF-8"):
        read_json(latin)
    (tmp_path / "empty.json").write_bytes(b"")
    with pytest.raises(DataError, match=r"empty\.json: file is empty, expected JSON"):
        read_json(tmp_path / "empty.json")


def test_half_a_cell_file_fails_compare_report(tmp_path: Path, capfd) -> None:
    """Issue 39's case: `lwap compare report` on a grid with half a cell file: exit 2, one line naming the
    file and the line (was a JSONDecodeError traceback naming no file)."""
    from lwap.cli import main

    results = tmp_path / "grid"
    shutil.copytree(REPO / "benchmarks" / "results" / "compare" / "unsup", results / "unsup")
    shutil.copy(REPO / "benchmarks" / "results" / "compare" / "untouched-backbone.json", results)
    cell = results / "unsup" / "lwap-seed1.json"
    data = cell.read_bytes()
    cell.write_bytes(data[: len(data) // 2])
    assert main(["compare", "report", "--results", str(results)]) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert re.match(
        rf"lwap compare: error: {re.escape(str(cell))}: line \d+, column \d+: not valid JSON", err
    )


def test_a_router_of_lwap_and_sentence_transformers_modules_loads(tiny_bert: Path, tmp_path: Path) -> None:
    """The Router check reads the routes' classes, it does not refuse Routers: LWAP's head on the query
    route and mean pooling on the document route load, and encode as built."""
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Router

    from lwap import build_model, load_model

    built = build_model(str(tiny_bert), "lwap")
    router = Router.for_query_document(query_modules=[built[1]], document_modules=[Pooling(32, "mean")])
    model = SentenceTransformer(modules=[built[0], router])
    model.save(str(tmp_path / "router"))
    loaded = load_model(tmp_path / "router")
    for encode in ("encode_query", "encode_document"):
        expected = getattr(model, encode)(SENTENCES)
        np.testing.assert_allclose(getattr(loaded, encode)(SENTENCES), expected, atol=1e-6)
