"""benchmarks/backbone/pretrain_mlm.py and its mlm_*.py modules: evaluation sentences kept out, held-out
split, stop/resume, export.

A 2-layer H=32 BERT on a few hundred real Wikipedia sentences (the sample packaged with lwap) into which
evaluation sentences were mixed, written differently (case, whitespace, tokenization).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModel

from benchmarks.backbone import pretrain_mlm as script
from benchmarks.backbone.mlm_checkpoints import finished_checkpoints, read_state, rewarmed_factor
from benchmarks.backbone.mlm_data import load_tokenizer, normalise, prepared_data, read_splits
from benchmarks.backbone.mlm_export import rows_text
from lwap.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("LWAP_DATA_DIR", REPO.parent / "shared" / "data"))
pytestmark = pytest.mark.skipif(not (MIRROR / "beir-scifact").is_dir(), reason="needs the data mirror")
SAMPLE = REPO / "lwap" / "sample_data" / "wiki" / "wiki_sentences_16k.txt.gz"
# evaluation sentences as they might appear in Wikipedia: other case, spacing, untokenized punctuation
DISGUISED = [
    "a GIRL is styling   her hair.",  # STS-B test (stsbenchmark-original)
    "You need to read a lot to know what you like and what you don't.",  # STS16, tokenized in SentEval
    "The young boys are playing outdoors and the man is smiling nearby.",  # SICK trial
    "0-Dimensional biomaterials lack inductive properties.",  # SciFact query
    # the second sentence of a SciFact abstract (corpus document 4983)
    "A line scan diffusion-weighted magnetic resonance imaging (MRI) sequence with diffusion tensor "
    "analysis was applied to measure the apparent diffusion coefficient, to calculate relative anisotropy, "
    "and to delineate three-dimensional fiber architecture in cerebral white matter in preterm (n = 17) "
    "and full-term infants (n = 7).",
]


@pytest.fixture()
def wiki(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """300 sample sentences with the disguised evaluation sentences at lines 3, 63, 123, ..."""
    monkeypatch.setenv("LWAP_DATA_DIR", str(MIRROR))
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as handle:
        lines = [next(handle).rstrip("\n") for _ in range(300)]
    for i, sentence in enumerate(DISGUISED):
        lines.insert(2 + 60 * i, sentence)
    path = tmp_path / "wiki.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def options(tmp_path: Path, wiki: Path, *extra: str) -> list[str]:
    return ["--name", "tiny-test", "--size", "tiny", "--wiki", str(wiki), "--held-out", "40", "--batch", "8",
            "--max-steps", "8", "--eval-steps", "4", "--warmup", "2", "--run-dir", str(tmp_path / "run"),
            "--out", str(tmp_path / "backbone"), *extra]  # fmt: skip


def test_evaluation_sentences_removed_and_held_out_split(tmp_path: Path, wiki: Path) -> None:
    train, held, report = read_splits(script.parse_args(options(tmp_path, wiki)))
    assert report["removed_as_evaluation"] == len(DISGUISED)
    assert set(report["evaluation_sentences"]) >= {"STS12", "STS16", "STS-B", "SICK", "SciFact"}
    remaining = {normalise(s) for s in train + held}
    assert not remaining & {normalise(s) for s in DISGUISED}
    sentences = [line for line in wiki.read_text(encoding="utf-8").splitlines() if line not in DISGUISED]
    assert held == sentences[:40]  # the first lines (the file is shuffled), evaluation sentences skipped
    assert train == sentences[40:] and len(train) + len(held) == 300
    args = script.parse_args(options(tmp_path, wiki))
    rows, held_out, report = prepared_data(args, load_tokenizer())
    assert len(held_out) == report["held_out_rows"] > 1 and len(rows) == report["train_rows"] > 1
    masked = torch.stack([row["labels"] != -100 for row in held_out])
    assert 0.1 < masked.sum() / torch.stack([row["attention_mask"] for row in held_out]).sum() < 0.2


def test_pretrain_stops_resumes_and_exports_a_backbone(tmp_path: Path, wiki: Path) -> None:
    import lwap

    run = tmp_path / "run"
    assert script.main(options(tmp_path, wiki, "--max-minutes", "0")) == 0  # a slice of one step
    assert [c.name for c in finished_checkpoints(run)] == ["checkpoint-1"]
    assert not (tmp_path / "backbone").exists()
    (run / "checkpoint-5").mkdir()  # a save cut short by a kill (no trainer_state.json): never resumed from
    with pytest.raises(ConfigError, match=r"--lr 0\.001 \(was 0\.0005\)"):
        script.main(options(tmp_path, wiki, "--lr", "0.001"))
    assert script.main(options(tmp_path, wiki)) == 0  # resumes to the last step, then exports
    state = read_state(finished_checkpoints(run)[-1])
    assert state["global_step"] == 8 and not (run / "checkpoint-5").exists()
    assert [h["step"] for h in state["log_history"] if "eval_loss" in h] == [4, 8]
    slices = json.loads((run / "run.json").read_text())["slices"]
    assert [s["to_step"] for s in slices] == [1, 8]
    assert state["num_input_tokens_seen"] > slices[0]["tokens_seen"] > 0
    assert all(s["cpu_seconds"] >= 0 for s in slices)  # the budget is counted in CPU-hours
    csv = (run / "loss_curve.csv").read_text().splitlines()
    assert csv[0] == "step,tokens_seen,train_loss,held_out_loss" and len(csv) > 3

    backbone = tmp_path / "backbone"
    source = (backbone / "SOURCE.md").read_text()
    assert "8/8 steps" in source and "perplexity" in source and "--max-minutes" not in source
    assert "(sentences packed `[CLS] s1 [SEP] s2 [SEP] ...`)" in source  # the default rows
    assert re.search(r"\(\d+\.\d\d CPU-hours\)", source)
    unigram = float(re.search(r"a unigram model, no context\) scores (\d+\.\d+)", source).group(1))
    assert math.log(32) < unigram < math.log(len(load_tokenizer()))  # skewed, below uniform
    assert 'removed_as_evaluation": 5' in source
    assert not (backbone / "modules.json").exists()  # a plain encoder, like bert-base-uncased
    assert AutoModel.from_pretrained(backbone).dtype == torch.float32
    model = lwap.build_model(str(backbone), pooling="lwap")
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # stored bf16, loaded fp32
    vectors = model.encode(["A man is playing a guitar.", "Stocks fell."], convert_to_tensor=True)
    assert vectors.shape == (2, 32) and torch.isfinite(vectors).all()
    sharded = tmp_path / "sharded"  # weights split into files of at most 1 MB (a GPU machine's limit)
    assert script.main(options(tmp_path, wiki, "--export", "--shard-mb", "1", "--out", str(sharded))) == 0
    assert len(list(sharded.glob("model-*.safetensors"))) > 1 and not (sharded / "model.safetensors").exists()
    again = lwap.build_model(str(sharded), pooling="mean").encode(["Stocks fell."], convert_to_tensor=True)
    plain = lwap.build_model(str(backbone), pooling="mean").encode(["Stocks fell."], convert_to_tensor=True)
    assert torch.equal(again, plain)


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_and_the_run_resumes(tmp_path: Path, wiki: Path) -> None:
    command = [sys.executable, str(REPO / "benchmarks/backbone/pretrain_mlm.py"),
               *options(tmp_path, wiki, "--max-steps", "100000", "--eval-steps", "3")]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as p:
        for line in p.stdout:
            if "held-out MLM loss" in line:
                p.send_signal(signal.SIGTERM)
                break
        output = p.stdout.read()
        assert p.wait(timeout=120) == 0, output
    stopped = read_state(finished_checkpoints(tmp_path / "run")[-1])["global_step"]
    assert 3 <= stopped < 100000
    resumed = subprocess.run([*command, "--max-minutes", "0"], capture_output=True, text=True, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from checkpoint-{stopped}" in resumed.stdout
    assert read_state(finished_checkpoints(tmp_path / "run")[-1])["global_step"] == stopped + 1


@pytest.mark.slow
def test_without_the_evaluation_sets_it_refuses_in_one_line(tmp_path: Path, wiki: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LWAP_DATA_DIR": str(tmp_path / "no-mirror")}
    command = [sys.executable, str(REPO / "benchmarks/backbone/pretrain_mlm.py"), *options(tmp_path, wiki)]
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("pretrain_mlm: no data mirror")


def test_a_fresh_machine_resumes_from_the_committed_snapshot(tmp_path: Path, wiki: Path) -> None:
    """The run folder is lost (a replaced machine); the snapshot (bf16 weights + the trainer's and the run's
    state, no optimizer) is what was committed: the run goes on from its step to the end and exports."""
    import shutil

    snapshot = tmp_path / "snapshot"
    extra = ("--snapshot-dir", str(snapshot), "--rewarm", "2")
    extra += ("--arch", "prenorm", "--rows", "sentence", "--group-by-length")  # the long run's shape
    assert script.main(options(tmp_path, wiki, *extra, "--max-minutes", "0")) == 0  # one step, then a save
    assert read_state(snapshot)["global_step"] == 1 and not (snapshot / "optimizer.pt").exists()
    assert json.loads((snapshot / "run.json").read_text())["slices"][0]["to_step"] == 1
    weights = next(snapshot.glob("*.safetensors"))
    assert (
        weights.stat().st_size
        < 0.6 * next((tmp_path / "run" / "checkpoint-1").glob("*.safetensors")).stat().st_size
    )
    shutil.rmtree(tmp_path / "run")
    assert script.main(options(tmp_path, wiki, *extra)) == 0
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["rewarmed_at"] == 1 and [s["to_step"] for s in run["slices"]] == [1, 8]
    assert read_state(finished_checkpoints(tmp_path / "run")[-1])["global_step"] == 8
    source = (tmp_path / "backbone" / "SOURCE.md").read_text()
    assert "pre-LayerNorm encoder (RobertaPreLayerNorm)" in source and "lwap layer-norms them" in source
    assert "(one sentence a row, `[CLS] s [SEP]`, in batches of like length)" in source
    from lwap import build_model

    layers = [type(m).__name__ for m in build_model(str(tmp_path / "backbone"), pooling="last2_avg")]
    assert layers[:3] == ["Transformer", "NormalizeHiddenStates", "LayerMean"]


def test_rewarmed_schedule_continues_the_linear_one() -> None:
    from transformers import get_linear_schedule_with_warmup

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    linear = get_linear_schedule_with_warmup(
        optimizer, num_warmup_steps=10, num_training_steps=100
    ).lr_lambdas[0]
    assert all(rewarmed_factor(k, 0, 10, 100, 1) == pytest.approx(linear(k)) for k in range(100))
    # resumed at step 60 with a 5-step ramp: the same schedule from there, scaled by 1/5, 2/5, ... then 1
    assert rewarmed_factor(0, 60, 10, 100, 5) == pytest.approx(linear(60) / 5)
    assert rewarmed_factor(4, 60, 10, 100, 5) == pytest.approx(linear(64))
    assert rewarmed_factor(40, 60, 10, 100, 5) == 0.0


def test_one_sentence_a_row(tmp_path: Path, wiki: Path) -> None:
    """`--rows sentence`: `[CLS] s [SEP]` a row, training and held-out alike, in a cache of its own."""
    tokenizer = load_tokenizer()
    args = script.parse_args(options(tmp_path, wiki, "--rows", "sentence", "--seq-len", "64"))
    rows, held_out, report = prepared_data(args, tokenizer)
    assert len(held_out) == 40 and all(row["input_ids"][0] == tokenizer.cls_token_id for row in held_out)
    assert report["train_rows"] == report["train"] and report["held_out_rows"] == report["held_out"] == 40
    assert all(r["input_ids"][0] == tokenizer.cls_token_id for r in rows)
    assert all((r["input_ids"] == tokenizer.sep_token_id).sum() == 1 for r in rows)
    assert all(len(r["input_ids"]) <= 64 for r in rows)
    assert [p.name for p in (tmp_path / "run").glob("*.npz")] == ["data-64-all-40-sentence-wiki.npz"]
    # and SOURCE.md says so (the long run's rows are not packed)
    grouped = script.parse_args(options(tmp_path, wiki, "--rows", "sentence", "--group-by-length"))
    assert rows_text(grouped).endswith("(one sentence a row, `[CLS] s [SEP]`, in batches of like length)")


def test_init_from_continues_an_exported_backbone(tmp_path: Path, wiki: Path) -> None:
    """--init-from (issue 50's dropout arms): the run starts from an exported encoder's weights, not random
    ones, and its SOURCE.md says so; a folder of another size is refused in one line."""
    first = tmp_path / "first"
    assert script.main([*options(tmp_path, wiki), "--out", str(first), "--max-steps", "2"]) == 0
    exported = AutoModel.from_pretrained(first).state_dict()
    run, out = (
        ["--run-dir", str(tmp_path / "more"), "--out", str(tmp_path / "more-out")],
        tmp_path / "more-out",
    )
    continued = options(tmp_path, wiki, "--init-from", str(first), "--lr", "0", "--max-steps", "1", *run)
    assert script.main(continued) == 0  # lr 0: the weights leave the run as they came in
    after = AutoModel.from_pretrained(out).state_dict()
    encoder = [k for k in exported if not k.startswith("pooler.")]
    assert all(torch.equal(exported[k].bfloat16(), after[k].bfloat16()) for k in encoder)
    assert f"the encoder of `{first}` (MLM continued from it" in (out / "SOURCE.md").read_text()
    other = options(
        tmp_path, wiki, "--init-from", str(first), "--size", "4l256", "--run-dir", str(tmp_path / "x")
    )
    with pytest.raises(Exception, match="does not fit this run's --arch/--size"):
        script.main(other)
