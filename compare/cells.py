"""Cell files: the figures kept from one `lwap eval`, a grid's cells read back, one budget per grid."""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lwap.checks.files import read_json_object
from lwap.compare.grid import BACKBONE, STS_COLUMNS
from lwap.errors import ConfigError, DataError
from lwap.registry import POOLINGS


def scores(results: dict[str, Any]) -> dict[str, float]:
    """The figures of one evaluation: each STS task (all and wmean), averages, SciFact, the STS-B test
    geometry (alignment, uniformity, anisotropy). Each group is read where `lwap eval` measured it (a run
    on the STS tasks alone has no SciFact); a new measure is one more block here."""
    row: dict[str, float] = {}
    sts = results.get("sts", {})
    for task in STS_COLUMNS:
        if task in sts:
            row[task] = sts[task]["score"]
            row[f"{task}_wmean"] = sts[task].get("wmean", sts[task]["score"])
    if all(task in row for task in STS_COLUMNS):
        row["avg_all"] = statistics.fmean(row[t] for t in STS_COLUMNS)
        row["avg_wmean"] = statistics.fmean(row[f"{t}_wmean"] for t in STS_COLUMNS)
    search = results.get("search", {}).get("scifact")
    if search:
        row.update({"scifact_ndcg@10": search["ndcg@10"], "scifact_mrr@10": search["mrr@10"]})
        row["scifact_recall@100"] = search["recall@100"]
    geometry = results.get("geometry") or {}  # STS-B test alignment / uniformity / anisotropy
    row.update({m: geometry[m] for m in ("alignment", "uniformity", "anisotropy") if m in geometry})
    return row


def layer_attention(results: dict[str, Any]) -> dict[str, Any]:
    """An LWAP model's mean attention per layer on STS-B test (what `lwap eval` measured), for figures."""
    profile = results.get("layer_attention")
    if not profile or not profile.get("sentences"):
        return {}
    keep = ("layers", "sentences", "mean_attention")
    return {"layer_attention": {key: profile[key] for key in keep}}


def pair_scores_file(cell_file: Path) -> Path:
    """Where a cell keeps each STS test pair's cosine: beside the cell, `ROW-seedN.pairs.npz`."""
    return cell_file.with_name(cell_file.stem + ".pairs.npz")


def keep_pair_scores(eval_dir: Path, cell_file: Path) -> Path | None:
    """Copy `lwap eval`'s pair_scores.npz beside the cell file (a bootstrap over test pairs between two
    cells reads them); None when the evaluation wrote none (a run on the mteb path)."""
    from lwap.checks.files import atomic_path
    from lwap.eval.report import PAIR_SCORES

    source = eval_dir / PAIR_SCORES
    if not source.is_file():
        return None
    target = pair_scores_file(cell_file)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as partial:
        shutil.copyfile(source, partial)
    return target


def read(path: Path) -> dict[str, Any]:
    """A cell file (or any JSON object lwap compare reads back); DataError naming the file and line if it
    is damaged (half a file, not JSON), and the key of a score that is not a finite number: `NaN` or
    `Infinity` (refused by `read_json_object`), null (how lwap writes a NaN) or a string. A mean over
    such a score would be NaN or a traceback, not a figure."""
    cell = read_json_object(path)
    scores = cell.get("scores")
    if scores is not None and not isinstance(scores, dict):
        raise DataError(f"{path}: scores is {type(scores).__name__}, expected an object of numbers")
    for key, value in (scores or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            found = (
                "null (a NaN when it was measured?)" if value is None else f"{type(value).__name__} {value!r}"
            )
            raise DataError(f"{path}: scores.{key} is {found}, expected a finite number")
    return cell


def write(path: Path, cell: dict[str, Any]) -> None:
    """Write a cell file whole (through a temporary name), so a stopped run never leaves half a cell that
    a later run would take as finished."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(cell, indent=2) + "\n", encoding="utf-8")
    partial.replace(path)


def load_cells(folder: Path, order: Sequence[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """One grid's cells (a backbone's regime folder), by row: the rows of `order` (a `Rows.order`; by
    default the registry's poolers) in that order, then any other row by name; seeds ascending.

    Two files for the same pooler and seed (a copy, a file renamed by hand) are refused, naming both:
    averaged, they would count one seed twice ("19 of 18 planned cells")."""
    cells: dict[str, list[dict[str, Any]]] = {}
    seen: dict[tuple[str, int], Path] = {}
    for path in sorted(folder.glob("*.json")):
        cell = read(path)
        pooler, seed = cell.get("pooler"), cell.get("seed")
        if not isinstance(pooler, str) or isinstance(seed, bool) or not isinstance(seed, int):
            raise DataError(
                f"{path}: expected a cell of lwap compare, with a string 'pooler' and an integer 'seed'"
            )
        if (pooler, seed) in seen:
            raise DataError(
                f"{path}: a second cell for pooler {pooler!r}, seed {seed} (the first: "
                f"{seen[pooler, seed]}); one grid has one cell per pooler and seed: remove one of them"
            )
        seen[pooler, seed] = path
        cells.setdefault(pooler, []).append(cell)
    order = POOLINGS if order is None else order
    rows = [*(row for row in order if row in cells), *sorted(set(cells) - set(order))]
    return {row: sorted(cells[row], key=lambda c: c["seed"]) for row in rows}


def fixed_overrides(backbone: str, extra: list[str]) -> list[str]:
    """The settings every cell of one grid shares beyond the config file (the backbone, any --set)."""
    return ([] if backbone == BACKBONE else [f"model.backbone={backbone}"]) + list(extra)


def shared_overrides(cells: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The overrides a grid's cells share (fixed_overrides as they were run); [] for a grid with no cells."""
    return next(iter(cells.values()))[0].get("overrides", [])[2:] if cells else []


def check_same_budget(folder: Path, shared: list[str]) -> None:
    """Refuse to mix budgets in one grid: every cell must differ only in pooler and seed."""
    for path in sorted(folder.glob("*.json")):
        made = read(path).get("overrides", [])[2:]
        if made != shared:
            raise ConfigError(
                f"{path} was made with overrides {made}, this run uses {shared}: one grid must share one "
                "budget (use another --backbone or results folder, or remove the old cells)"
            )
