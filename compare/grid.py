"""What one comparison grid is: its regimes, fixed evaluation settings, and where its cells live inside a
results folder. Its rows (the registry's poolers, and those a rows file adds) are rows.py's."""

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

STS_COLUMNS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
STS_LABELS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")
BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"  # the default; cells of others go under backbones/
EVAL_PRECISION = "bf16"  # changes no score by more than 0.06 (README, evaluation baselines), halves the time
EVAL_MAX_SEQ_LENGTH = 256  # the backbone's own inference length, for every row (training truncates to 32)


def shipped_config(name: str) -> str:
    """The installed file of a config a cell names (`configs/compare/unsup-minilm.yaml` is the shipped
    `compare/unsup-minilm`), so cells train on the budget installed with lwap from any folder; a name
    that is not shipped is passed on as given."""
    from lwap.config_files import shipped_configs

    shipped = shipped_configs().get(name.removeprefix("configs/").removesuffix(".yaml"))
    return str(shipped) if shipped else name


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
