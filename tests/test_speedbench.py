"""speedbench's shared parts that every speed benchmark (CPU and GPU) measures with: the clock, the FLOP
count and the machine-and-commit capture."""

from __future__ import annotations

import time

import pytest

from benchmarks.speed.speedbench.flops import backbone_shapes, training_flops
from benchmarks.speed.speedbench.machine import git_commit, machine_info
from benchmarks.speed.speedbench.timing import Clock


def test_the_clock_times_steps_after_the_warm_up_and_splits_marked_ones() -> None:
    clock = Clock()
    clock.start(warmup=2)
    for step in range(5):
        clock.mark("fwd_start")
        time.sleep(0.002)
        clock.mark("fwd_end")
        time.sleep(0.001)
        if step != 4:  # the last step has no backward mark: its backward runs to the step end
            clock.mark("bwd_end")
        clock.sink.append((8, 32, 200))  # what record_forwards appends per forward
        clock.step_end()
    window = clock.finish()
    assert len(clock.steps) == 3  # steps 3-5: the first two are the warm-up
    assert all(s.forwards == [(8, 32, 200)] for s in clock.steps)
    for s in clock.steps:
        assert s.phases["forward"] >= 0.002 and s.phases["backward"] >= 0.001 and s.phases["optimizer"] >= 0
        assert s.seconds >= s.phases["forward"] + s.phases["backward"]
    assert clock.steps[-1].phases["optimizer"] == 0.0
    assert window >= sum(s.seconds for s in clock.steps) * 0.99


def test_a_step_without_forward_marks_has_no_phases() -> None:
    clock = Clock()
    clock.start()  # warm-up 1: every step after the first is timed
    for _ in range(3):
        clock.step_end()
    assert [s.phases for s in clock.steps] == [{}, {}]


def test_the_flop_count_is_bert_bases_for_its_shapes() -> None:
    """6·N·tokens + 12·L·H·T² per row: bert-base (N = 12 × (4·768² + 2·768·3072) = 84.9 M non-embedding
    matmul weights) at 128 rows of 32 tokens is 2.1018 TFLOP, as the GPU benchmark counted it before it
    used this count."""
    import torch
    from transformers import BertConfig, BertModel

    with torch.device("meta"):
        shapes = backbone_shapes(BertModel(BertConfig()))
    assert shapes.linear_params == 12 * (4 * 768**2 + 2 * 768 * 3072)
    per_token_forward = 12 * (2 * (4 * 768**2 + 2 * 768 * 3072) + 4 * 32 * 768)
    assert training_flops([(128, 32, 128 * 32)], shapes) == pytest.approx(3 * per_token_forward * 128 * 32)
    # real tokens only: fewer tokens, shorter rows
    assert training_flops([(128, 32, 64 * 32)], shapes, padded=False) < training_flops([(128, 32, 0)], shapes)


def test_the_machine_capture_has_what_every_report_reads(tmp_path) -> None:
    info = machine_info(threads=3)
    assert info["torch_threads"] == 3 and info["device"] == info["cpu"] and info["cores"] >= 1
    for key in ("torch", "transformers", "sentence_transformers", "python", "commit", "date", "cuda"):
        assert key in info
    assert git_commit(tmp_path) is None  # not a checkout: no commit, no error


def test_speed_says_which_files_it_wrote(tmp_path) -> None:
    """`speed.py --only` without `stock/fp32` writes the JSON alone (the report's tables are read against
    that row) and says so; a run with it writes both."""
    import json

    from conftest import REPO

    from benchmarks.speed.speed import save

    result = json.loads((REPO / "docs" / "BENCHMARKS.json").read_text(encoding="utf-8"))
    only = {**result, "training": {k: v for k, v in result["training"].items() if k != "stock/fp32"}}
    md = tmp_path / "only" / "BENCHMARKS.md"
    said = save(only, md)
    assert said.startswith(f"wrote {md.with_suffix('.json')}; not {md}: ") and not md.exists()
    assert json.loads(md.with_suffix(".json").read_text(encoding="utf-8"))["training"] == only["training"]
    md = tmp_path / "all" / "BENCHMARKS.md"
    assert save(result, md) == f"wrote {md} and {md.with_suffix('.json')}"
    assert md.read_text(encoding="utf-8").startswith("# Speed benchmarks")
