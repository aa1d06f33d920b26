"""The elastic frontier's grid: backbones and their budgets, rows, seeds, depths, dimensions, where cells go.

The budgets are the comparison grid's (docs/RESULTS.md): `configs/compare/{unsup,sup}-minilm.yaml` with
each backbone's `--set`s as its committed cells ran; a row adds only its pooler, its training mode and its
seed. Pre-registered in docs/COMPARE.md ("the elastic frontier").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lwap.compare.grid import EVAL_MAX_SEQ_LENGTH, EVAL_PRECISION, REGIMES, STS_COLUMNS

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path("benchmarks/results/elastic")  # cells (tracked), relative to the repository root
WORK = Path("outputs/elastic")  # trained models, logs, per-depth partial evaluations (not tracked)
SEEDS = (0, 1, 2)
POOLERS = ("lwap", "mean", "first_last_avg", "all_levels_avg")
# elastic: lwap's depth loss at every depth 1..L (objective.depths, equal weights); ordinary: plain SimCSE,
# truncated after training; adaptive: sentence-transformers' AdaptiveLayerLoss (defaults) around lwap's
# SimCSELoss, mean pooling, the library's documented two-column input (benchmarks/elastic/anchor_train.py)
MODES = ("elastic", "ordinary", "adaptive")
ROWS: tuple[tuple[str, str], ...] = (
    *((pooler, "elastic") for pooler in POOLERS),
    *((pooler, "ordinary") for pooler in POOLERS),
    ("mean", "adaptive"),
)
EVAL_TASKS = (*STS_COLUMNS, "scifact")
EVAL_BATCH_SIZE = 128
# --smoke: the whole pipeline on a tiny budget, results kept out of the tracked folder
SMOKE_SETS = (
    "training.max_steps=3",
    "training.per_device_batch_size=16",
    "data.max_examples=64",
    "eval.dev=null",
    "eval.keep_best=false",
    "eval.before_training=false",
    "output.save_steps=3",
)
SMOKE_TASKS = ("stsb",)
SMOKE_MAX_SEQ_LENGTH = 32
SMOKE_RESULTS = Path("outputs/elastic-smoke/results")
SMOKE_WORK = Path("outputs/elastic-smoke/work")


def row_name(pooler: str, mode: str) -> str:
    return f"{pooler}-{mode}"


@dataclass(frozen=True)
class Grid:
    """One backbone in one regime, with the budget of its committed comparison cells."""

    name: str  # the backbone's short name: results/<name>/<regime>/
    backbone: str  # as the comparison cells name it (hub id, or a path from the repository root)
    regime: str  # unsup | sup
    layers: int  # L
    dims: tuple[int, ...]  # the full width first, then the shorter prefixes evaluated
    sets: tuple[str, ...] = ()  # the budget's --sets beyond the config (as its committed cells)
    lwap_sets: tuple[str, ...] = ()  # what the `lwap` rows add (all-MiniLM-L6-v2: the native start)
    rows: tuple[tuple[str, str], ...] = field(default=ROWS)

    @property
    def config(self) -> str:
        return REGIMES[self.regime]

    def depths(self) -> list[int]:
        return list(range(1, self.layers + 1))

    def overrides(self, pooler: str, mode: str, seed: int, smoke: bool = False) -> list[str]:
        """The `--set`s of one cell: its pooler and seed, the budget's, the row's, the smoke budget's."""
        sets = [f"model.pooling={pooler}", f"training.seed={seed}"]
        if self.backbone != "sentence-transformers/all-MiniLM-L6-v2":
            sets.append(f"model.backbone={self.backbone}")
        sets += self.sets
        if pooler == "lwap":
            sets += self.lwap_sets
        if mode == "elastic":
            sets.append(f"objective.depths=[{', '.join(map(str, self.depths()))}]")
        return sets + (list(SMOKE_SETS) if smoke else [])

    def cell_file(self, results: Path, pooler: str, mode: str, seed: int) -> Path:
        return results / self.name / self.regime / f"{row_name(pooler, mode)}-seed{seed}.json"

    def work_dir(self, work: Path, pooler: str, mode: str, seed: int) -> Path:
        return work / self.name / self.regime / f"{row_name(pooler, mode)}-seed{seed}"


MINILM_DIMS = (384, 192, 96)
GRIDS: tuple[Grid, ...] = (
    *(
        Grid(
            "all-MiniLM-L6-v2",
            "sentence-transformers/all-MiniLM-L6-v2",
            regime,
            6,
            MINILM_DIMS,
            lwap_sets=("model.lwap_start=native",),
        )
        for regime in ("unsup", "sup")
    ),
    *(
        Grid("minilm-l6-mlm", "../shared/models/minilm-l6-mlm", regime, 6, MINILM_DIMS)
        for regime in ("unsup", "sup")
    ),
    Grid(
        "bert-prenorm-4l256-sentences",
        "benchmarks/backbones/bert-prenorm-4l256-sentences",
        "sup",
        4,
        (256, 128, 64),
        sets=("training.learning_rate=3e-4", "training.epochs=3", "model.weighted_layer_start=3"),
    ),
)


def find_grids(names: list[str] | None) -> list[Grid]:
    """The grids named `backbone/regime` or `backbone` (all of its regimes); all for None."""
    if not names:
        return list(GRIDS)
    chosen = [g for g in GRIDS if f"{g.name}/{g.regime}" in names or g.name in names]
    unknown = [n for n in names if not any(n in (g.name, f"{g.name}/{g.regime}") for g in GRIDS)]
    if unknown:
        from lwap.errors import ConfigError

        valid = ", ".join(f"{g.name}/{g.regime}" for g in GRIDS)
        raise ConfigError(f"unknown grid {unknown[0]!r}; valid: {valid}")
    return chosen


__all__ = ["EVAL_MAX_SEQ_LENGTH", "EVAL_PRECISION", "GRIDS", "ROWS", "Grid"]
