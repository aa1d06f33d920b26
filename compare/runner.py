"""Training and evaluating the missing cells of a grid: `lwap train` then `lwap eval` per cell, as
subprocesses (each cell a fresh process, as a user would run it), resumable at any point."""

from __future__ import annotations

import functools
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lwap.checks.locking import claim
from lwap.compare import cells as cellfiles
from lwap.compare import settings
from lwap.compare.grid import EVAL_MAX_SEQ_LENGTH, EVAL_PRECISION, REGIMES, Grid, shipped_config
from lwap.compare.rows import Rows, load_rows
from lwap.errors import LwapError

# What a cell keeps of `lwap train`'s summary, under the names cells have always had (cells made before
# `eval.dev` existed, and every cell since, keep the STS-B dev score under these): cell key <- summary key.
TRAIN_KEPT = {
    "steps": "steps",
    "dev_spearman_before": "dev_score_before",
    "best_dev_spearman": "best_dev_score",
    "best_step": "best_step",
    "dev_spearman_by_step": "dev_scores_by_step",
    "dev_geometry_by_step": "dev_geometry_by_step",
    "resumed_from": "resumed_from",  # a resumed cell: the report marks the comparisons it is in
}


class CellFailed(LwapError):
    """`lwap train` or `lwap eval` of a cell failed; its log says why."""


def run_logged(command: list[str], log: Path) -> None:
    """Run a lwap command, its output appended to `log`; stop the grid if it fails."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        result = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise CellFailed(f"command failed (exit {result.returncode}); see {log}: {' '.join(command)}")


def evaluate(model: str, out: Path, log: Path, tasks: str = "all") -> dict[str, Any]:
    """`lwap eval` of `model` into `out` (results.json, and each STS pair's cosine in pair_scores.npz)."""
    command = [sys.executable, "-m", "lwap", "eval", model, "--tasks", tasks, "--output", str(out)]
    options = ["--precision", EVAL_PRECISION, "--max-seq-length", str(EVAL_MAX_SEQ_LENGTH), "--no-progress"]
    options.append("--pair-scores")
    run_logged([*command, *options], log)
    return cellfiles.read(out / "results.json")


def restart_flags(out: Path) -> list[str]:
    """How a cell's training starts: a stopped cell resumes from its last complete checkpoint; one stopped
    before any checkpoint was complete (its folder holds only logs) starts over."""
    from lwap.train.outputs import latest_complete_checkpoint

    if latest_complete_checkpoint(out):
        return ["--resume"]
    return ["--overwrite"] if out.exists() else []


def run_once(lock: Path, done: Path, what: str, work: Callable[[], None]) -> bool:
    """`work()` unless `done` exists or another grid process holds `lock` (then a [busy] line): how two
    processes share one grid. True when this process ran it."""
    if done.exists():
        return False
    with claim(lock) as mine:
        if not mine:
            owner = f" ({mine.owner.describe()})" if mine.owner else ""
            print(f"[busy] {what}: another grid process runs it{owner}", flush=True)
            return False
        if done.exists():  # finished by another process between the check and the claim
            return False
        work()
    return True


def train(config: str, overrides: list[str], out: Path, log: Path) -> None:
    """`lwap train CONFIG --set ...` into `out`, resuming a stopped run; nothing if its model is saved."""
    if (out / "model" / "modules.json").is_file():
        return
    command = [sys.executable, "-m", "lwap", "train", config, *(a for o in overrides for a in ("--set", o))]
    run_logged([*command, *restart_flags(out)], log)


def kept_training(summary: dict[str, Any]) -> dict[str, Any]:
    """What a cell keeps of a run's train_summary.json: its steps, its STS-B dev scores (step 0, the best,
    every evaluation), its STS-B dev geometry and the checkpoint it resumed from (None: one run). A run
    whose dev set was not STS-B (`--set eval.dev=...`) keeps no dev scores: the report's dev columns are
    STS-B's."""
    from lwap.train.dev_sets import STSB_DEV_KEY

    stsb = summary.get("dev_metric_key") == STSB_DEV_KEY
    kept = {cell: summary.get(key) for cell, key in TRAIN_KEPT.items()}
    if not stsb:
        kept |= {"dev_spearman_before": None, "best_dev_spearman": None, "dev_spearman_by_step": []}
    return kept


class Cell:
    """One (regime, row, seed) of one backbone's grid; `rows` says what the row trains (by default the
    registry's poolers)."""

    def __init__(
        self, grid: Grid, backbone: str, regime: str, row: str, seed: int, rows: Rows | None = None
    ) -> None:
        self.grid, self.backbone, self.regime, self.row, self.seed = grid, backbone, regime, row, seed
        self.rows = rows or load_rows()
        self.file = grid.cell_file(backbone, regime, row, seed)
        self.out = grid.work_dir(backbone) / regime / f"{row}-seed{seed}"
        self.log = self.out.with_name(f"{self.out.name}.log")
        self.lock = self.out.with_name(f"{self.out.name}.lock")

    def __str__(self) -> str:
        return f"{self.regime} {self.row} seed {self.seed}"

    def run(self, extra: list[str], tasks: str = "all") -> bool:
        """Train and evaluate unless the cell file exists or another grid process has the cell; True
        when this process ran it."""
        return run_once(self.lock, self.file, str(self), lambda: self.train_and_evaluate(extra, tasks))

    def train_and_evaluate(self, extra: list[str], tasks: str) -> None:
        """`lwap train` (resuming a stopped run), `lwap eval`, then the cell file."""
        shared = cellfiles.fixed_overrides(self.backbone, extra)
        cellfiles.check_same_budget(self.file.parent, shared)
        pooling = [f"model.pooling={self.rows.pooling_of(self.row)}", f"training.seed={self.seed}"]
        overrides = [*pooling, *shared]
        variant = self.rows.overrides(self.row, self.regime)
        print(f"[run ] {self} -> {self.out}", flush=True)
        recorded = settings.current(None, EVAL_PRECISION)  # before training: the commit that trains it
        started = time.perf_counter()
        train(
            shipped_config(REGIMES[self.regime]),
            [*variant, *overrides, f"output.dir={self.out}"],
            self.out,
            self.log,
        )
        train_seconds = time.perf_counter() - started
        summary = cellfiles.read(self.out / "train_summary.json")
        tick = time.perf_counter()
        results = evaluate(str(self.out / "model"), self.out / "eval", self.log, tasks)
        pairs = cellfiles.keep_pair_scores(self.out / "eval", self.file)  # before the cell: it marks done
        cell = {
            "regime": self.regime,
            "pooler": self.row,
            "seed": self.seed,
            "backbone": self.backbone,
            "config": REGIMES[self.regime],
            "overrides": overrides,
            **({"variant": variant} if variant else {}),
            "commit": recorded["commit"],
            "train_wall_seconds": round(train_seconds, 1),
            "eval_wall_seconds": round(time.perf_counter() - tick, 1),
            "train": kept_training(summary),
            "eval_precision": EVAL_PRECISION,
            "eval_max_seq_length": EVAL_MAX_SEQ_LENGTH,
            **({"eval_tasks": tasks} if tasks != "all" else {}),
            "settings": {**recorded, "train_precision": summary.get("precision")},
            "scores": cellfiles.scores(results),
            **cellfiles.layer_attention(results),
            **({"pair_scores": pairs.name} if pairs else {}),
        }
        cellfiles.write(self.file, cell)


def untouched_name(pooling: str) -> str:
    """The work folder of an untouched row (mean keeps the name it had before the other rows existed)."""
    return "untouched" if pooling == "mean" else f"untouched-{pooling}"


def untouched_model(backbone: str, work: Path, pooling: str = "mean") -> str:
    """The backbone as a sentence encoder with no training: itself if it is a sentence-transformers
    folder (and `pooling` is mean), else (a plain Hugging Face encoder, e.g. MLM-only) the backbone with
    `pooling` (`cls` is the plain last [CLS] at inference), saved."""
    from lwap import build_model
    from lwap.backbones import resolve_backbone

    local = Path(backbone) if Path(backbone).exists() else Path(resolve_backbone(backbone))
    if (local / "modules.json").is_file() and pooling == "mean":
        return backbone
    folder = work / untouched_name(pooling) / "model"
    if not (folder / "modules.json").is_file():
        build_model(backbone, pooling=pooling).save(str(folder))
    return str(folder)


def run_reference(grid: Grid, backbone: str, poolings: tuple[str, ...] | None = None) -> None:
    """Untouched rows: the backbone's mean pooling always; for a plain encoder (no sentence-transformers
    pooling of its own) also the rest of `poolings` (by default the rows file's `untouched`: SimCSE's
    last [CLS] and first-last average, as it reports for BERT)."""
    poolings = tuple(load_rows().untouched) if poolings is None else poolings
    local = Path(backbone) if Path(backbone).exists() else None
    plain = local is not None and not (local / "modules.json").is_file()
    work = grid.work_dir(backbone)
    for pooling in poolings if plain else ("mean",):
        cell_file = grid.reference_file(backbone, pooling)
        lock = work / f"{untouched_name(pooling)}.lock"  # a second grid process moves on to the cells
        measure = functools.partial(measure_reference, backbone, pooling, work, cell_file)
        run_once(lock, cell_file, f"untouched {pooling}", measure)


def measure_reference(backbone: str, pooling: str, work: Path, cell_file: Path) -> None:
    """Evaluate one untouched row (no training) and write its reference file."""
    tick = time.perf_counter()
    name = untouched_name(pooling)
    model = untouched_model(backbone, work, pooling)
    results = evaluate(model, work / name / "eval", work / f"{name}.log")
    cell = {
        "model": f"{backbone} ({pooling} pooling, no training)",
        "backbone": backbone,
        "pooling": pooling,
        "commit": settings.code_version(),
        "eval_wall_seconds": round(time.perf_counter() - tick, 1),
        "eval_precision": EVAL_PRECISION,
        "eval_max_seq_length": EVAL_MAX_SEQ_LENGTH,
        "settings": settings.current(None, EVAL_PRECISION),
        "scores": cellfiles.scores(results),
    }
    cellfiles.write(cell_file, cell)
    print(f"[ok  ] untouched {pooling}: avg {cell['scores']['avg_all']:.2f}", flush=True)


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def run_grid(
    grid: Grid,
    backbone: str,
    regime: str,
    rows: list[str],
    seeds: list[int],
    extra: list[str],
    *,
    untouched: bool = True,
    tasks: str = "all",
    defined: Rows | None = None,
) -> None:
    """The missing cells of `rows` in one regime, seed-major (a stopped grid is level across rows), with a
    progress line per cell: cells done of the total, time elapsed, an estimate of the time left.
    `defined` says what each row trains (by default the registry's poolers)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    defined = defined or load_rows()
    if untouched:
        run_reference(grid, backbone, tuple(defined.untouched))
    todo = [Cell(grid, backbone, regime, row, seed, defined) for seed in seeds for row in rows]
    started = time.perf_counter()
    ran: list[float] = []
    for done, cell in enumerate(todo, start=1):
        tick = time.perf_counter()
        if cell.run(extra, tasks):
            ran.append(time.perf_counter() - tick)
            result = cellfiles.read(cell.file)["scores"]
            state = f"avg {result['avg_all']:.2f} in {minutes(ran[-1])}" if "avg_all" in result else "ok"
        else:
            state = "done" if cell.file.exists() else "busy"
        left = sum(not c.file.exists() for c in todo[done:])
        estimate = f", about {minutes(left * statistics.median(ran))} left" if ran and left else ""
        elapsed = minutes(time.perf_counter() - started)
        print(f"[{done}/{len(todo)}] {cell}: {state}; elapsed {elapsed}{estimate}", flush=True)
