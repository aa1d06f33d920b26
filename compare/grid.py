"""What one comparison grid is: its regimes, poolers, LWAP variants, fixed evaluation settings, and where
its cells live inside a results folder."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from lwap.checks.files import read_json_object
from lwap.errors import DataError

# The budget of each regime: a config shipped with lwap (lwap.configs), found by name from any folder.
# The name is also what cells record and the report quotes, as it was when the configs lived only in
# the repository's configs/ folder.
REGIMES = {
    "unsup": "configs/compare/unsup-minilm.yaml",
    "sup": "configs/compare/sup-minilm.yaml",
}
REGIME_TITLES = {
    "unsup": "Unsupervised SimCSE (Wikipedia sentences)",
    "sup": "Supervised SimCSE (SNLI triplets)",
}
REGIME_WORDS = {"unsup": "unsupervised", "sup": "supervised"}  # in running text and table cells
POOLERS = ("lwap", "weighted", "cls", "mean", "first_last_avg", "last2_avg")
PLANNED_SEEDS = (0, 1, 2)
# LWAP for already-trained encoders (issue 12): the `lwap` pooler with these settings on top of the grid's
# budget. The values were fixed before any variant ran, not tuned: head lr ×10 (a new head's usual lr is
# an order of magnitude above fine-tuning's); warm-up = the first quarter of the steps (one evaluation
# interval of the supervised budget). `{warmup}` is filled in per regime.
WARMUP_STEPS = {"unsup": 50, "sup": 33}
NATIVE_VARIANTS: dict[str, tuple[str, ...]] = {
    "lwap-native": ("model.lwap_start=native",),
    "lwap-headlr": ("training.head_learning_rate_multiplier=10",),
    "lwap-warmup": ("training.head_warmup_steps={warmup}",),
    "lwap-all": (
        "model.lwap_start=native",
        "training.head_learning_rate_multiplier=10",
        "training.head_warmup_steps={warmup}",
    ),
}
# LWAP's own components replaced (issue 37: why LWAP trails mean pooling): the paper's `lwap` with its
# output read from the attention alone (no last [CLS]), its queries made of each layer's mean or learned,
# and both changes together. Each is a registry option of `lwap` (lwap/registry.py), so a row is `lwap`
# plus its overrides, trained and evaluated as every other row.
COMPONENT_VARIANTS: dict[str, tuple[str, ...]] = {
    "lwap-attn": ("model.lwap_output=attention",),
    "lwap-meanq": ("model.lwap_queries=mean",),
    "lwap-latent": ("model.lwap_queries=latent",),
    "lwap-meanq-attn": ("model.lwap_queries=mean", "model.lwap_output=attention"),
    "lwap-latent-attn": ("model.lwap_queries=latent", "model.lwap_output=attention"),
}
# The levels' scales made alike (issue 50): `lwap` with every level it reads layer-normed, no parameters.
SCALE_VARIANTS: dict[str, tuple[str, ...]] = {"lwap-levelnorm": ("model.lwap_level_norm=all",)}
VARIANTS: dict[str, tuple[str, ...]] = {  # rows that are `lwap`
    **NATIVE_VARIANTS,
    **COMPONENT_VARIANTS,
    **SCALE_VARIANTS,
}
# Controls for the paper's claims (issue 50), rows of their own beside the default poolers: supervised
# SimCSE's own baseline, `cls` with its MLP kept at inference (SimCSE's --pooler_type cls; the grid's
# `cls` drops it, as unsupervised SimCSE does), and a fixed all-levels mean (`all_levels_avg`: every level
# LWAP reads, equal weights, the same normalisation LWAP gets).
CLS_VARIANTS: dict[str, tuple[str, ...]] = {"cls-mlp": ("model.mlp_at_inference=true",)}
CONTROL_POOLERS = ("all_levels_avg",)
ROWS = POOLERS + CONTROL_POOLERS + tuple(CLS_VARIANTS) + tuple(VARIANTS)

STS_COLUMNS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
STS_LABELS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")
BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"  # the default; cells of others go under backbones/
EVAL_PRECISION = "bf16"  # changes no score by more than 0.06 (README, evaluation baselines), halves the time
EVAL_MAX_SEQ_LENGTH = 256  # the backbone's own inference length, for every row (training truncates to 32)
UNTOUCHED_POOLINGS = ("mean", "cls", "first_last_avg")  # SimCSE's "BERT (first-last avg.)", "BERT [CLS]" rows


def shipped_config(name: str) -> str:
    """The installed file of a config a cell names (`configs/compare/unsup-minilm.yaml` is the shipped
    `compare/unsup-minilm`), so cells train on the budget installed with lwap from any folder; a name
    that is not shipped is passed on as given."""
    from lwap.config_files import shipped_configs

    shipped = shipped_configs().get(name.removeprefix("configs/").removesuffix(".yaml"))
    return str(shipped) if shipped else name


def pooling_of(row: str) -> str:
    return "lwap" if row in VARIANTS else "cls" if row in CLS_VARIANTS else row


def variant_overrides(row: str, regime: str) -> list[str]:
    overrides = VARIANTS.get(row) or CLS_VARIANTS.get(row, ())
    return [o.format(warmup=WARMUP_STEPS[regime]) for o in overrides]


def backbone_name(backbone: str) -> str:
    return Path(backbone.rstrip("/")).name


class Grid(NamedTuple):
    """A results folder (the cell files, small, worth keeping) and a work folder (models, checkpoints,
    logs: large, disposable). The default backbone's cells sit at the top of `results`, any other
    backbone's under backbones/<name>/, each with one folder per regime."""

    results: Path
    work: Path

    def cells_dir(self, backbone: str) -> Path:
        return self.results if backbone == BACKBONE else self.results / "backbones" / backbone_name(backbone)

    def cell_file(self, backbone: str, regime: str, row: str, seed: int) -> Path:
        return self.cells_dir(backbone) / regime / f"{row}-seed{seed}.json"

    def reference_file(self, backbone: str, pooling: str = "mean") -> Path:
        name = "untouched-backbone.json" if pooling == "mean" else f"untouched-{pooling}.json"
        return self.cells_dir(backbone) / name

    def work_dir(self, backbone: str) -> Path:
        return self.work if backbone == BACKBONE else self.work / "backbones" / backbone_name(backbone)


def backbones(results: Path) -> list[str]:
    """The default backbone (where it has cells, or nothing else has), then every other backbone with
    cells under backbones/."""
    found = []
    for folder in sorted((results / "backbones").glob("*")):
        for path in sorted(folder.rglob("*.json")):
            cell = read_json_object(path)
            if not isinstance(cell.get("backbone"), str):
                raise DataError(f"{path}: no 'backbone' (not a cell file of lwap compare)")
            found.append(cell["backbone"])
            break
    default = any((results / regime).glob("*.json") for regime in REGIMES)
    default = default or (results / "untouched-backbone.json").exists()
    return [BACKBONE, *found] if default or not found else found
