"""The product runs from a non-editable install alone: no checkout, no data mirror, no hub.

A fresh venv gets `pip install --no-deps` of a copy of this checkout (a real wheel build, not editable);
its dependencies (torch, sentence-transformers, ...) come from the environment running the tests, added
to the venv's path without that environment's own lwap. Then, from an empty folder, with
`LWAP_DATA_DIR` pointing nowhere and the hub offline: `lwap train quickstart` (a few steps, one STS-B dev
evaluation, all from the data packaged with lwap), `lwap encode` of its model, and `lwap eval` on a task
that needs the mirror, which must fail in one line naming both ways to get the data.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
NOT_PACKAGED = (".git", ".venv", "outputs", "runs", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _install(tmp_path: Path) -> Path:
    """A venv with lwap installed from a copy of the checkout (non-editable); returns its bin folder."""
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_PACKAGED))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # this environment's packages, as plain path entries: their .pth files (an editable lwap) are not run
    outer = [p for p in (*site.getsitepackages(), site.getusersitepackages()) if Path(p).is_dir()]
    Path(purelib, "outer-environment.pth").write_text("\n".join(outer) + "\n", encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(source)]
    installed = subprocess.run(pip, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-3000:]
    shutil.rmtree(source)  # nothing of the checkout is left to import from
    return venv / "bin"


def test_installed_package_trains_encodes_and_explains_missing_data(tmp_path) -> None:
    bin_dir = _install(tmp_path)
    work = tmp_path / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LWAP_", "HF_", "VIRTUAL_ENV"))}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        LWAP_DATA_DIR="/nonexistent",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf-home"),  # an empty hub cache: nothing cached can stand in
    )
    python, lwap = str(bin_dir / "python"), str(bin_dir / "lwap")
    where = _run([python, "-c", "import lwap, lwap.train, lwap.configs; print(lwap.__file__)"], work, env)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(bin_dir.parent), where.stdout  # the installed copy

    listed = _run([lwap, "train", "--list"], work, env).stdout
    assert "quickstart" in listed and "compare/unsup-minilm" in listed
    # `lwap compare` reads its budgets from the installed configs (a --set is checked against them first)
    compare = _run([lwap, "compare", "run", "--regime", "unsup", "--set", "training.nope=1"], work, env)
    assert compare.returncode == 2 and "unknown key 'training.nope'" in compare.stderr, compare.stderr
    assert str(bin_dir.parent) in compare.stderr and not (work / "lwap-compare").exists()

    shortened = [
        "training.max_steps=2",
        "eval.eval_steps=2",
        "output.save_steps=2",
        "eval.before_training=false",
        "training.logging_steps=1",
        "training.progress_bar=false",
    ]
    train = _run([lwap, "train", "quickstart", *[a for s in shortened for a in ("--set", s)]], work, env)
    assert train.returncode == 0, train.stderr[-3000:]
    assert "using the sample packaged with lwap" in train.stderr
    model = work / "outputs" / "quickstart" / "model"
    summary = json.loads((work / "outputs" / "quickstart" / "train_summary.json").read_text(encoding="utf-8"))
    assert summary["steps"] == 2 and summary["train_examples"] == 16_000
    assert 0.5 < summary["final_model_dev_score"] <= 1.0  # STS-B dev from the package
    card = (model / "README.md").read_text(encoding="utf-8")
    assert "base_model: sentence-transformers/all-MiniLM-L6-v2" in card and "unsupervised SimCSE" in card

    (work / "in.txt").write_text("A man is playing a guitar.\nSomeone plays music.\n", encoding="utf-8")
    encode = _run([lwap, "encode", str(model), "--input", "in.txt", "--output", "x.npy"], work, env)
    assert encode.returncode == 0, encode.stderr[-3000:]
    assert np.load(work / "x.npy").shape == (2, 384)

    evaluate = _run([lwap, "eval", str(model), "--tasks", "stsb", "--no-progress"], work, env)
    assert evaluate.returncode == 2 and "Traceback" not in evaluate.stderr
    error = evaluate.stderr.strip()
    assert error.count("\n") == 0, error
    assert "STS-B test" in error and "LWAP_DATA_DIR" in error and "go online" in error
    hub_cache = tmp_path / "hf-home" / "hub"
    assert not hub_cache.exists() or not any(hub_cache.iterdir())  # nothing was downloaded
