"""examples/: every script runs as a user runs it, as a process of its own, on a tiny model (the packaged
MiniLM where a random one cannot work) and a tiny data mirror, and writes what it says it writes (slow);
every script is run here and listed in examples/README.md (fast), so a new example cannot go untested."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, make_tiny_bert
from test_compare_run import data_mirror
from test_doc_links import broken_links

EXAMPLES = REPO / "examples"
TINY = "{tiny}"  # the tiny encoder's folder, filled in when the example runs
HIDDEN = 32  # the tiny encoder's embedding dimension (conftest.make_tiny_bert)

# each example's arguments beside --output: small sizes, a tiny model
ARGUMENTS = {
    "training/train_on_pairs.py": ["--backbone", TINY, "--max-steps", "2"],
    "training/train_on_scored_pairs.py": ["--backbone", TINY, "--max-steps", "2", "--loss", "cosine"],
    # a random encoder ranks every candidate alike, so no negative passes the margin: the packaged
    # MiniLM (the example's default backbone) mines, and trains its 2 steps
    "training/mine_then_train.py": ["--max-steps", "2"],
    "encoding/encode_and_search.py": ["--model", TINY, "--top-k", "2"],
    "evaluation/evaluate_your_files.py": ["--model", TINY],
    "compare/compare_poolers.py": ["--backbone", TINY, "--poolers", "lwap", "--seeds", "0",
                                   "--max-steps", "2"],
}


def listed_examples() -> list[str]:
    return sorted(path.relative_to(EXAMPLES).as_posix() for path in EXAMPLES.rglob("*.py"))


def loads_and_encodes(model_dir: Path, dimension: int = HIDDEN) -> None:
    import lwap

    embeddings = lwap.load_model(model_dir).encode(["A first sentence.", "And a second one."])
    assert embeddings.shape == (2, dimension)


def summary_of(out: Path) -> dict:
    return json.loads((out / "run" / "train_summary.json").read_text(encoding="utf-8"))


def train_on_pairs(out: Path, stdout: str, tiny: Path) -> None:
    assert (out / "pairs.csv").read_text(encoding="utf-8").splitlines()[0] == "sent0,sent1"
    summary = summary_of(out)
    assert summary["steps"] == 2 and summary["dev_metric"] == "spearman"
    assert [step for step, _ in summary["dev_scores_by_step"]] == [0, 2]  # before and after training
    loads_and_encodes(Path(summary["model_dir"]))
    assert "the diagonal should be highest" in stdout


def train_on_scored_pairs(out: Path, stdout: str, tiny: Path) -> None:
    assert (out / "train.tsv").read_text(encoding="utf-8").splitlines()[0] == "sentence1\tsentence2\tscore"
    config = (out / "run" / "config.yaml").read_text(encoding="utf-8")
    assert "name: scored_pairs" in config and "scored_loss: cosine" in config
    summary = summary_of(out)
    assert summary["steps"] == 2 and summary["dev_set"].startswith(str(out / "dev.tsv"))
    loads_and_encodes(Path(summary["model_dir"]))
    assert len(re.findall(r"cosine, rated", stdout)) == 2


def mine_then_train(out: Path, stdout: str, tiny: Path) -> None:
    corpus = set((out / "corpus.txt").read_text(encoding="utf-8").splitlines())
    with open(out / "mined.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 8 and list(rows[0]) == ["sent0", "sent1", "hard_neg"]
    assert all(row["hard_neg"] in corpus and row["hard_neg"] != row["sent1"] for row in rows)
    summary = summary_of(out)
    assert summary["steps"] == 2 and summary["dev_metric"] == "ndcg@10"
    assert summary["dev_set"].startswith(str(out / "dev"))
    loads_and_encodes(Path(summary["model_dir"]), 384)  # the MiniLM's dimension


def encode_and_search(out: Path, stdout: str, tiny: Path) -> None:
    embeddings = np.load(out / "embeddings.npy")
    lines = (out / "corpus.txt").read_text(encoding="utf-8").splitlines()
    assert embeddings.shape == (len(lines), HIDDEN) and embeddings.dtype == np.float32
    assert np.allclose(np.linalg.norm(embeddings, axis=1), 1, atol=1e-5)
    assert len([line for line in stdout.splitlines() if line.startswith("  ")]) == 3 * 2  # 3 queries, top 2


def evaluate_your_files(out: Path, stdout: str, tiny: Path) -> None:
    results = json.loads((out / "eval" / "results.json").read_text(encoding="utf-8"))
    assert results["pairs"]["pairs"]["pairs"] == 8 and -100 <= results["pairs"]["pairs"]["score"] <= 100
    search = results["search"]["my-search"]
    assert (search["queries"], search["documents"], search["judgements"]) == (4, 5, 4)
    assert 0 <= search["ndcg@10"] <= 100 and (out / "eval" / "results.md").is_file()


def compare_poolers(out: Path, stdout: str, tiny: Path) -> None:
    from lwap.compare.grid import Grid

    cell = json.loads(Grid(out, out / "work").cell_file(str(tiny), "unsup", "lwap", 0).read_text())
    assert "avg_all" in cell["scores"] and "training.max_steps=2" in cell["overrides"]
    assert "Grid: 1 of 1 planned cells" in stdout and (out / "RESULTS.md").is_file()


CHECKS: dict[str, Callable[[Path, str, Path], None]] = {
    "training/train_on_pairs.py": train_on_pairs,
    "training/train_on_scored_pairs.py": train_on_scored_pairs,
    "training/mine_then_train.py": mine_then_train,
    "encoding/encode_and_search.py": encode_and_search,
    "evaluation/evaluate_your_files.py": evaluate_your_files,
    "compare/compare_poolers.py": compare_poolers,
}


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT saved as a sentence-transformers model (mean pooling, normalised): the examples
    start LWAP from the backbone's own pooling (`lwap_start: native`), which a plain BERT folder lacks."""
    from sentence_transformers import SentenceTransformer, models

    folder = tmp_path_factory.mktemp("examples-model")
    transformer = models.Transformer(str(make_tiny_bert(folder / "bert")))
    pooling = models.Pooling(transformer.get_embedding_dimension(), "mean")
    SentenceTransformer(modules=[transformer, pooling, models.Normalize()]).save(str(folder / "encoder"))
    return folder / "encoder"


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """STS-B dev, the evaluation sets and Wikipedia-like sentences, each tiny (the compare tests' mirror)."""
    return data_mirror(tmp_path_factory.mktemp("examples-data"))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CHECKS))
def test_the_example_runs_and_writes_what_it_says(
    name: str, tiny_encoder: Path, mirror: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    arguments = [str(tiny_encoder) if argument == TINY else argument for argument in ARGUMENTS[name]]
    env = {**os.environ, "LWAP_DATA_DIR": str(mirror), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *arguments, "--output", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stderr[-3000:]}"
    CHECKS[name](out, done.stdout, tiny_encoder)
    print(f"{name}: {time.perf_counter() - started:.0f} s")


def test_every_example_is_run_by_the_slow_test_and_listed_in_the_readme() -> None:
    examples = listed_examples()
    assert examples, "no example found under examples/"
    assert sorted(CHECKS) == examples and sorted(ARGUMENTS) == examples  # a new example needs a check here
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for name in examples:
        assert f"[{name}]({name})" in readme, f"examples/README.md does not list {name}"
        assert f"python examples/{name}" in readme, f"examples/README.md does not say how to run {name}"
    assert broken_links(EXAMPLES / "README.md") == []  # every link there leads somewhere


def test_every_example_is_short_and_says_how_to_run_it() -> None:
    """Readable top to bottom: a docstring with its command lines first, at most 90 lines."""
    for name in listed_examples():
        text = (EXAMPLES / name).read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 90, f"{name}: {len(text.splitlines())} lines"
        assert text.startswith('"""') and f"python examples/{name}" in text.split('"""')[1], name
