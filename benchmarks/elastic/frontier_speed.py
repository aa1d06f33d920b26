"""Encode speed at each depth: the frontier's other axis.

Speed depends on the architecture, not on the weights or the training mode, so it is measured once per
backbone on freshly built models, every pooler cut to each depth (lwap.truncate: its backbone really has
k layers), encoding a fixed set of sentences as the evaluation does (bf16, max length 256, batch 128), the
best of `repeats` timed runs after a warm-up. Every (pooler, depth) is timed once a round, in rounds, so
that a change of the machine's load falls on every pooler and depth alike: the poolers' heads cost little
beside the backbone, and timing them one after another put the machine's drift between them (up to 15 %
at one depth, the first measurement). Time is the machine's: measure with nothing else running (the file
records the protocol and the torch threads). Dimensions do not change encoding time (only search cost),
so they are not timed. One JSON file per backbone, written whole.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.elastic.frontier_grid import (
    EVAL_BATCH_SIZE,
    EVAL_MAX_SEQ_LENGTH,
    EVAL_PRECISION,
    POOLERS,
    Grid,
)


def speed_sentences(count: int) -> list[str]:
    """The first `count` distinct sentences of STS-B test (the data mirror, or its hub copy)."""
    from lwap.eval.sts_data import load_sts_task

    task = load_sts_task("stsb", "senteval")
    sentences = dict.fromkeys(
        s for part in task.subsets.values() for s in (*part.sentences1, *part.sentences2)
    )
    return list(sentences)[:count]


def time_rounds(models: dict[Any, Any], sentences: list[str], repeats: int) -> dict[Any, list[float]]:
    """Seconds to encode `sentences` with each model, in rounds (every model once per round)."""
    from lwap.encoding import encode

    def once(model: Any, texts: list[str]) -> float:
        tick = time.perf_counter()
        encode(model, texts, batch_size=EVAL_BATCH_SIZE, precision=EVAL_PRECISION)
        return time.perf_counter() - tick

    for model in models.values():  # warm-up
        once(model, sentences[: EVAL_BATCH_SIZE * 2])
    seconds: dict[Any, list[float]] = {key: [] for key in models}
    for _ in range(repeats):
        for key, model in models.items():
            seconds[key].append(once(model, sentences))
    return seconds


def pooler_models(grid: Grid, pooler: str, max_length: int) -> dict[int, Any]:
    """`pooler` on `grid`'s backbone with the row's model settings, cut to each depth 1..L."""
    import yaml

    from lwap import build_model
    from lwap.model import set_max_seq_length
    from lwap.truncate import truncate_model

    options: dict[str, Any] = {}  # the row's model settings (all-MiniLM-L6-v2's lwap: the native start)
    for override in grid.overrides(pooler, "ordinary", 0):
        key, _, value = override.partition("=")
        section, name = key.split(".", 1)
        if section == "model" and name not in ("pooling", "backbone"):
            options[name] = yaml.safe_load(value)
    model = build_model(grid.backbone, pooler, **options)
    models = {depth: truncate_model(model, depth).eval() for depth in grid.depths()}
    for small in models.values():
        set_max_seq_length(small, max_length, lambda _: None)
    return models


def measure(
    grid: Grid, output: Path, count: int = 2000, repeats: int = 3, max_length: int = EVAL_MAX_SEQ_LENGTH
) -> Path:
    """Time every pooler of `grid`'s backbone at every depth into `output` (nothing if all are there)."""
    import torch

    from lwap.checks.files import read_json_object, write_json_atomically
    from lwap.compare import settings

    if output.is_file() and set(read_json_object(output).get("poolers", {})) >= set(POOLERS):
        return output
    sentences = speed_sentences(count)
    models = {}
    for pooler in POOLERS:
        print(f"[speed] {grid.name} {pooler}", flush=True)
        models |= {(pooler, depth): m for depth, m in pooler_models(grid, pooler, max_length).items()}
    seconds = time_rounds(models, sentences, repeats)
    poolers: dict[str, Any] = {}
    for (pooler, depth), found in seconds.items():
        poolers.setdefault(pooler, {})[str(depth)] = {
            "seconds": [round(s, 3) for s in found],
            "median_seconds": round(statistics.median(found), 3),
            "sentences_per_second": round(len(sentences) / min(found), 1),
        }
    data = {
        "backbone": grid.backbone,
        "sentences": len(sentences),
        "protocol": (
            f"best of {repeats} rounds of timed encodes (every pooler at every depth once a round) of the "
            f"first {len(sentences)} distinct STS-B test sentences after a warm-up; {EVAL_PRECISION}, max "
            f"length {max_length}, batch {EVAL_BATCH_SIZE}; torch threads {torch.get_num_threads()}"
        ),
        "settings": settings.current(None, EVAL_PRECISION),
        "poolers": poolers,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomically(data, output)
    return output
