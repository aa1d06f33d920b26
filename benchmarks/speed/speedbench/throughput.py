"""A variant's measured steps summarised: throughput, step times, achieved FLOP/s and MFU."""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.speed.speedbench.flops import training_flops
from benchmarks.speed.speedbench.settings import BATCH
from benchmarks.speed.speedbench.timing import Step
from benchmarks.speed.speedbench.variants import Variant


def summarize(variant: Variant, bound: dict[str, Any]) -> dict[str, Any]:
    """Throughput = median over rounds of (timed sentences / timed seconds); step time = median step.

    Per round, not per step, because length-grouped batches make steps unequal: a median step would
    describe a typical batch, not the throughput. Each round's data order has its own seed (the same for
    every variant), so the rounds also sample different batches.
    """
    assert variant.shapes is not None
    times = [s.seconds for s in variant.steps]
    per_round = len(variant.steps) // len(variant.rounds)
    chunks = [variant.steps[i : i + per_round] for i in range(0, len(variant.steps), per_round)]

    def rate(steps: list[Step], padded: bool = True) -> float:  # FLOP/s of one round
        assert variant.shapes is not None
        flops = sum(training_flops(s.forwards, variant.shapes, padded=padded) for s in steps)
        return flops / sum(s.seconds for s in steps)

    throughput = statistics.median(BATCH * len(c) / sum(s.seconds for s in c) for c in chunks)
    achieved = statistics.median(rate(c) for c in chunks) / 1e9
    useful = statistics.median(rate(c, padded=False) for c in chunks) / 1e9
    median = statistics.median(times)
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [median, median, median]
    padded_tokens = sum(r * t for s in variant.steps for r, t, _ in s.forwards)
    real_tokens = sum(x for s in variant.steps for _, _, x in s.forwards)
    return {
        "key": variant.key,
        "label": variant.label,
        "precision": variant.precision,
        "timed_steps": len(times),
        "sentences_per_s": throughput,
        "median_step_s": median,
        "step_s_q1_q3": [quartiles[0], quartiles[2]],
        "round_seconds": variant.rounds,
        "gflop_per_step": statistics.mean(training_flops(s.forwards, variant.shapes) for s in variant.steps)
        / 1e9,
        "padded_tokens_per_step": padded_tokens / len(times),
        "real_token_fraction": real_tokens / max(padded_tokens, 1),
        "achieved_gflops": achieved,
        "mfu_vs_bf16_bound": achieved / bound["bf16"]["bound_gflops"],
        "mfu_vs_fp32_bound": achieved / bound["fp32"]["bound_gflops"],
        "useful_mfu_vs_bf16_bound": useful / bound["bf16"]["bound_gflops"],
    }
