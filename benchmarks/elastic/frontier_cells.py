"""One frontier cell: train (a `lwap train` subprocess, resumable), then evaluate the kept model at every
depth 1..L (truncated in memory, lwap.truncate) and every dimension of its grid, then write the cell file.

Each depth's scores are kept in the work folder as they come (`depths/depth-K.json`, written whole), so a
stopped evaluation resumes at the next depth; the cell file is written last, whole, and its existence
is what makes a cell done. The depths and dimensions share one encoding (`SharedForward`): each batch
runs the full model's backbone once, every depth's pooler reads its levels from that forward, and the
vectors are cached by the batch's input ids for every later depth and dimension.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.elastic.frontier_grid import (
    EVAL_BATCH_SIZE,
    EVAL_MAX_SEQ_LENGTH,
    EVAL_PRECISION,
    EVAL_TASKS,
    REPO,
    SMOKE_MAX_SEQ_LENGTH,
    SMOKE_TASKS,
    Grid,
    row_name,
)


class SharedForward:
    """Every depth's sentence embeddings from one full-depth forward per batch, cached by its input ids.

    In eval mode a model's output for a batch depends only on the batch, and lwap's evaluation encodes the
    same batches at every depth and dimension. On a batch not seen before, `lwap.depth.DepthReader` runs
    the full model's backbone once and each depth's pooler on levels 0..k, which is what the k-layer
    model computes (layers above k do not act on those below; tests/test_depth.py, and against a fresh
    truncated model's scores tests/test_elastic_frontier.py); every later depth and dimension takes the
    cached vectors (sentence-transformers cuts them to `truncate_dim`). A cell's evaluation thus costs one
    full-depth encoding instead of one per depth (about (L+1)/2 of them). While the layer-attention
    recorder listens to the evaluated model's LWAP module (lwap eval's profile task, STS-B test), that
    model's own forward runs, so each depth's attention profile is its own.
    """

    def __init__(self, model: Any, depths: list[int]) -> None:
        from lwap.depth import DepthReader

        if model.training:
            raise ValueError("SharedForward caches eval-mode outputs only")
        self.reader = DepthReader(model, depths)
        self.depths = list(depths)
        self.cache: dict[bytes, Any] = {}  # batch → (batch, depth, dim), every depth from one forward
        self.own: dict[tuple[int, bytes], Any] = {}  # (depth, batch) → the depth's own model's vectors
        self.hits = 0

    @staticmethod
    def key(features: dict[str, Any]) -> bytes:
        digest = hashlib.sha256()
        for name in ("input_ids", "attention_mask"):
            value = features[name].cpu().numpy()
            digest.update(str(value.shape).encode() + value.tobytes())
        return digest.digest()

    @contextlib.contextmanager
    def active(self, small: Any, depth: int) -> Iterator[None]:
        """`small` (the model cut to `depth`) encodes from the shared cache inside the block."""
        from lwap.model import find_lwap

        if small.training:
            raise ValueError("SharedForward caches eval-mode outputs only")
        index = self.depths.index(depth)
        listened = find_lwap(small)
        original = small.forward

        def forward(features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            key = self.key(features)
            if (depth, key) in self.own:
                vectors = self.own[depth, key]
            elif listened is not None and listened._forward_hooks:  # the recorder: this depth's own forward
                out = original(features, **kwargs)
                self.own[depth, key] = out["sentence_embedding"].detach().clone()
                return out
            elif key in self.cache:
                vectors = self.cache[key][:, index]
            else:
                embedded = self.reader.embed(dict(features), self.depths)
                self.cache[key] = embedded["sentence_embedding"].detach()
                return {**features, "sentence_embedding": self.cache[key][:, index].clone()}
            self.hits += 1  # taken from a cache: no forward for this batch
            return {**features, "sentence_embedding": vectors.clone()}

        small.forward = forward
        try:
            yield
        finally:
            del small.forward


def evaluate_depth(
    model: Any,
    depth: int,
    dims: tuple[int, ...],
    tasks: tuple[str, ...],
    max_length: int,
    shared: SharedForward | None = None,
) -> dict:
    """{dim: scores} (and the layer attention at full width) of `model` cut to `depth` layers; `shared`
    (one for all of a model's depths) encodes each batch once for every depth."""
    from lwap.compare.cells import layer_attention, scores
    from lwap.eval.api import evaluate_model
    from lwap.truncate import truncate_model

    small = truncate_model(model, depth).eval()
    shared = shared or SharedForward(model, [depth])
    hits = shared.hits
    out: dict[str, Any] = {"scores": {}}
    with shared.active(small, depth):
        for dim in dims:
            small.truncate_dim = None if dim == dims[0] else dim
            results = evaluate_model(
                small,
                tasks,
                precision=EVAL_PRECISION,
                max_seq_length=max_length,
                batch_size=EVAL_BATCH_SIZE,
            )
            out["scores"][str(dim)] = scores(results)
            if dim == dims[0]:
                out |= layer_attention(results)
    out["reused_batches"] = shared.hits - hits
    return out


def train(grid: Grid, pooler: str, mode: str, overrides: list[str], out: Path, log: Path) -> None:
    """`lwap train` (or the anchor's) into `out`, resuming a stopped run; nothing if its model is saved."""
    from lwap.compare.runner import restart_flags, run_logged

    if (out / "model" / "modules.json").is_file():
        return
    entry = ["-m", "benchmarks.elastic.anchor_train"] if mode == "adaptive" else ["-m", "lwap", "train"]
    sets = [a for o in [*overrides, f"output.dir={out}"] for a in ("--set", o)]
    with contextlib.chdir(REPO):  # the budgets' relative paths (../shared/models/...) are the root's
        run_logged([sys.executable, *entry, grid.config, *sets, *restart_flags(out)], log)


def run_cell(
    grid: Grid, pooler: str, mode: str, seed: int, results: Path, work: Path, smoke: bool = False
) -> dict[str, Any]:
    """Train and evaluate one cell (whatever of it is not done yet) and write its cell file."""
    from lwap.checks.files import read_json_object as read  # not lwap.compare's reader: no grid cells here
    from lwap.checks.files import write_json_atomically
    from lwap.compare import settings
    from lwap.compare.runner import kept_training
    from lwap.model import load_model

    out = grid.work_dir(work, pooler, mode, seed)
    log = out.with_name(f"{out.name}.log")
    overrides = grid.overrides(pooler, mode, seed, smoke)
    recorded = settings.current(None, EVAL_PRECISION)  # before training: the commit that trains it
    started = time.perf_counter()
    train(grid, pooler, mode, overrides, out, log)
    train_seconds = time.perf_counter() - started
    summary = read(out / "train_summary.json")
    tasks, max_length = (SMOKE_TASKS, SMOKE_MAX_SEQ_LENGTH) if smoke else (EVAL_TASKS, EVAL_MAX_SEQ_LENGTH)
    tick = time.perf_counter()
    model, shared = None, None
    depths: dict[str, Any] = {}
    for depth in grid.depths():
        part = out / "depths" / f"depth-{depth}.json"
        if not part.is_file():
            model = model or load_model(out / "model").eval()  # where sentence-transformers puts it
            shared = shared or SharedForward(model, grid.depths())
            part.parent.mkdir(parents=True, exist_ok=True)
            found = evaluate_depth(model, depth, grid.dims, tasks, max_length, shared)
            write_json_atomically(found, part)
        depths[str(depth)] = read(part)
    kept = kept_training(summary)  # STS-B dev under the names grid cells keep it by
    names = ("steps", "dev_spearman_before", "best_dev_spearman", "best_step")
    train_kept = {key: kept[key] for key in names}
    train_kept |= {
        "sentences_per_second": summary.get("sentences_per_second"),
        "resumed_from": summary.get("resumed_from"),  # set: train_wall_seconds is the last run's part only
    }
    cell = {
        "grid": grid.name,
        "regime": grid.regime,
        "row": row_name(pooler, mode),
        "pooler": pooler,
        "mode": mode,
        "seed": seed,
        "backbone": grid.backbone,
        "config": grid.config,
        "overrides": overrides,
        "commit": recorded["commit"],
        "train_wall_seconds": round(train_seconds, 1),
        "eval_wall_seconds": round(time.perf_counter() - tick, 1),
        "train": train_kept,
        "eval": {"tasks": list(tasks), "precision": EVAL_PRECISION, "max_seq_length": max_length},
        "dims": list(grid.dims),
        "settings": {**recorded, "train_precision": summary.get("precision")},
        "depths": depths,
    }
    cell_file = grid.cell_file(results, pooler, mode, seed)
    cell_file.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomically(cell, cell_file)  # whole or not at all: a cell file's existence means done
    # the cell is done: its checkpoints (optimizer state: ~3x the model) are not needed to re-evaluate
    # the kept model, and 135 cells of them would fill a disk; the model folder stays
    shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return cell


def run_grid(
    grid: Grid, seeds: list[int], results: Path, work: Path, smoke: bool, rows: list[str] | None
) -> int:
    """Every missing cell of `grid` (seed by seed, so that a seed's rows share a commit); cells another
    process holds are skipped with a [busy] line (lwap.checks.locking). Returns the number of cells run."""
    from lwap.compare.runner import run_once

    done = 0
    for seed in seeds:
        for pooler, mode in grid.rows:
            if rows and row_name(pooler, mode) not in rows:
                continue
            cell_file = grid.cell_file(results, pooler, mode, seed)
            out = grid.work_dir(work, pooler, mode, seed)
            out.parent.mkdir(parents=True, exist_ok=True)
            lock = out.with_name(f"{out.name}.lock")
            what = f"{grid.name}/{grid.regime} {row_name(pooler, mode)} seed {seed}"
            print(f"[cell] {what}", flush=True)

            def work_cell(p: str = pooler, m: str = mode, s: int = seed) -> None:
                run_cell(grid, p, m, s, results, work, smoke)

            done += run_once(lock, cell_file, what, work_cell)
    return done
