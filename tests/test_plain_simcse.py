"""benchmarks/backbone/plain_simcse.py, the lwap-free SimCSE control: a few steps on a 2-layer H=32 BERT
write a folder sentence-transformers loads, the dev curve starts untrained and the kept step is a trained one;
the InfoNCE loss has its textbook values; a caller's mistake is one line and exit 2."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO, make_tiny_bert

from benchmarks.backbone import plain_simcse as script

SCRIPT = REPO / "benchmarks" / "backbone" / "plain_simcse.py"
WORDS = ["man", "dog", "cat", "plays", "runs", "guitar", "river", "city", "eats", "red", "blue", "old"]


@pytest.fixture(scope="module")
def backbone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert-2l"), num_layers=2)


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    """200 sentences (gzip, blank lines between some) and 24 STS-B-dev-like pairs in the original layout,
    one with bare quotes and two trailing license fields."""
    sentences = [" ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 5, 7)) + f" {i}." for i in range(200)]
    train = tmp_path / "train.txt.gz"
    with gzip.open(train, "wt", encoding="utf-8") as handle:
        for i, sentence in enumerate(sentences):
            handle.write(sentence + ("\n\n" if i % 50 == 0 else "\n"))
    rows = []
    for i in range(24):
        a, b = sentences[i], sentences[i] if i % 3 == 0 else sentences[i + 100]
        rows.append(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{(i % 6):.3f}\t{a} \t{b}")
    rows[5] = 'main-forums\tdeft-forum\t2014\t0005\t2.400\tHe said "no.\tShe said "yes".\tlicense\tby'
    dev = tmp_path / "sts-dev.csv"
    dev.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return train, dev


def options(backbone: Path, train: Path, dev: Path, out: Path, *extra: str) -> list[str]:
    return ["--backbone", str(backbone), "--train", str(train), "--stsb-dev", str(dev), "--out", str(out),
            "--max-examples", "64", "--batch", "16", "--max-length", "16", "--eval-steps", "2",
            "--precision", "fp32", "--device", "cpu", *extra]  # fmt: skip


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_a_short_run_saves_a_loadable_model_and_its_dev_curve(
    tmp_path: Path, backbone: Path, files: tuple[Path, Path], pooling: str
) -> None:
    from safetensors.torch import load_file
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "out"
    assert script.main(options(backbone, *files, out, "--pooling", pooling)) == 0
    record = json.loads((out / "plain_simcse.json").read_text(encoding="utf-8"))
    assert record["steps"] == 4 and record["sentences"] == 64
    assert [step for step, _ in record["dev_curve"]] == [0, 2, 4]
    trained = record["dev_curve"][1:]
    best = max(score for _, score in trained)
    assert record["best_step"] == next(step for step, score in trained if score == best)  # first, trained
    assert record["args"]["pooling"] == pooling and record["machine"]["torch"] == torch.__version__

    model = SentenceTransformer(str(out), device="cpu")
    assert model.encode(["a b"]).shape == (1, 32)
    assert json.loads((out / "1_Pooling" / "config.json").read_text())["pooling_mode"] == pooling
    assert not any("mlp" in name for name, _ in model.named_parameters())  # SimCSE's MLP: training only
    saved, start = load_file(out / "model.safetensors"), load_file(backbone / "model.safetensors")
    assert any(not torch.equal(saved[k], start[k]) for k in start if k in saved)  # training moved weights


def test_dropout_sets_both_rates_in_training_and_the_saved_config_keeps_the_backbones(
    tmp_path: Path, backbone: Path, files: tuple[Path, Path]
) -> None:
    out = tmp_path / "out"
    argv = [*options(backbone, *files, out, "--pooling", "mean", "--dropout", "0.03"), "--max-examples", "32"]
    assert script.main(argv) == 0
    record = json.loads((out / "plain_simcse.json").read_text(encoding="utf-8"))
    assert record["training_dropout"] == [0.03, 0.03] and record["args"]["dropout"] == 0.03
    assert json.loads((backbone / "config.json").read_text())["hidden_dropout_prob"] != 0.03
    model, _ = script.load_backbone(str(backbone))
    assert model.config.hidden_dropout_prob != 0.03  # without --dropout: the backbone's own


def test_clip_scales_the_gradients_to_the_norm_and_without_it_nothing_changes() -> None:
    layer = torch.nn.Linear(2, 2)
    params = list(layer.parameters())
    for param in params:
        param.grad = torch.full_like(param, 2.0)  # 6 entries of 2: norm sqrt(24)
    before = [p.grad.clone() for p in params]
    assert script.clip_gradients(params, None) == pytest.approx(math.sqrt(24), rel=1e-6)
    assert all(torch.equal(p.grad, b) for p, b in zip(params, before, strict=True))
    assert script.clip_gradients(params, 100.0) == pytest.approx(math.sqrt(24), rel=1e-6)
    assert all(torch.equal(p.grad, b) for p, b in zip(params, before, strict=True))  # under the norm
    assert script.clip_gradients(params, 1.0) == pytest.approx(math.sqrt(24), rel=1e-6)  # the norm before
    assert float(torch.nn.utils.get_total_norm([p.grad for p in params])) == pytest.approx(1.0, rel=1e-5)
    assert all(
        torch.allclose(p.grad, b / math.sqrt(24), rtol=1e-5) for p, b in zip(params, before, strict=True)
    )


def test_clip_changes_the_training_and_the_record_says_so(
    tmp_path: Path, backbone: Path, files: tuple[Path, Path]
) -> None:
    """The same seed with and without --clip: the first step's gradient is the same (the clip only
    scales it), the weights then part; the record keeps the clip and each step's norm before it."""
    from safetensors.torch import load_file

    records, weights = {}, {}
    for label, extra in (("plain", []), ("clipped", ["--clip", "0.001"])):
        out = tmp_path / label
        argv = [*options(backbone, *files, out, "--pooling", "mean"), "--max-examples", "32", *extra]
        assert script.main(argv) == 0
        records[label] = json.loads((out / "plain_simcse.json").read_text(encoding="utf-8"))
        weights[label] = load_file(out / "model.safetensors")
    plain, clipped = records["plain"], records["clipped"]
    assert (plain["clip"], plain["args"]["clip"], plain["steps_clipped"]) == (None, None, 0)
    assert (clipped["clip"], clipped["args"]["clip"], clipped["steps_clipped"]) == (0.001, 0.001, 2)
    assert len(plain["grad_norm_by_step"]) == len(clipped["grad_norm_by_step"]) == plain["steps"] == 2
    assert clipped["grad_norm_by_step"][0] == pytest.approx(plain["grad_norm_by_step"][0], rel=1e-4)
    assert min(clipped["grad_norm_by_step"]) > 0.001
    assert any(not torch.equal(weights["plain"][k], weights["clipped"][k]) for k in weights["plain"])


def test_info_nce_is_log_batch_when_nothing_differs_and_near_zero_when_pairs_separate() -> None:
    info_nce = script.info_nce
    same = torch.ones(8, 4)
    assert float(info_nce(same, same, 0.05)) == pytest.approx(math.log(8), rel=1e-6)
    eye = torch.eye(8)
    assert float(info_nce(eye, eye, 0.05)) < 1e-6
    assert float(info_nce(eye, eye.roll(1, dims=0), 0.05)) > 19  # every pair matched to the wrong row


def test_readers_skip_blank_lines_and_keep_bare_quotes(files: tuple[Path, Path]) -> None:
    train, dev = files
    sentences = script.read_sentences(train, 60)
    assert len(sentences) == 60 and all(s.strip() for s in sentences)
    pairs = script.read_stsb(dev)
    assert len(pairs.gold) == 24 and pairs.gold[5] == 2.4
    assert (pairs.first[5], pairs.second[5]) == ('He said "no.', 'She said "yes".')
    assert not pairs.first[0].endswith(" ")


def test_a_missing_backbone_folder_is_one_line_and_exit_2(tmp_path: Path, files: tuple[Path, Path]) -> None:
    command = [sys.executable, str(SCRIPT), "--pooling", "cls"]
    command += options(tmp_path / "no-such-backbone", *files, tmp_path / "out")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("plain_simcse.py: error: --backbone")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--train": "missing.txt.gz"}, "--train: no such file"),
        ({"--max-examples": "8"}, "smaller than --batch"),
        ({"--dropout": "1.0"}, "--dropout must be in [0, 1)"),
        ({"--clip": "0"}, "--clip must be > 0"),
    ],
)
def test_other_mistakes_are_one_line_and_exit_2(
    tmp_path: Path,
    backbone: Path,
    files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    change: dict[str, str],
    message: str,
) -> None:
    argv = [*options(backbone, *files, tmp_path / "out"), "--pooling", "mean", "--dropout", "0.1"]
    argv += ["--clip", "1.0"]
    for flag, value in change.items():
        argv[argv.index(flag) + 1] = str(tmp_path / value) if flag == "--train" else value
    assert script.main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("plain_simcse.py: error:") and message in lines[0]
