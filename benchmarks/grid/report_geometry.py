"""The geometry of the repository's grids made before `lwap eval` measured it: those grids keep only
their scores, not their models, so their cells were retrained for the geometry (same config, overrides
and seed; STS tasks only) and kept apart, in RESULTS/geometry/<backbone>/<regime>/, with the untouched
rows as RESULTS/geometry/<backbone>/untouched-<pooling>.json (made by benchmarks/geometry_cells.py,
retired: commit 06d4c1a has it). The report and the figure draw them as panels marked *retrained*, beside
the panels of grids that measured their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwap.compare import geometry
from lwap.compare.cells import load_cells, read
from lwap.compare.geometry import MEASURES, Panel, Run
from lwap.compare.grid import REGIMES, Grid, backbone_name, backbones
from lwap.compare.prose import Wording
from lwap.compare.rows import Rows

RETRAIN_COMMAND = "python benchmarks/geometry_cells.py run"  # retired; commit 06d4c1a has it


def retrained_run(cell: dict[str, Any]) -> Run:
    dev = [(e["step"], e["uniformity"], e["alignment"]) for e in cell.get("dev_geometry", [])]
    measured = {m: cell["geometry"][m] for m in MEASURES}
    return Run(cell["seed"], measured, cell["scores"].get("avg_all"), dev, cell["train"]["best_step"])


def retrained_dir(grid: Grid, backbone: str) -> Path:
    """Where the geometry retrains of a grid made before the measures are kept."""
    return grid.results / "geometry" / backbone_name(backbone)


def untouched_rows(grid: Grid, backbone: str, rows: Rows) -> dict[str, dict[str, Any]]:
    """The untouched rows with geometry: the reference file's own, else its retrained measurement."""
    found = geometry.untouched_rows(grid, backbone, rows)
    for pooling in rows.untouched:
        retrained = retrained_dir(grid, backbone) / f"untouched-{pooling}.json"
        if pooling in found or not retrained.exists():
            continue
        reference = grid.reference_file(backbone, pooling)
        scores = read(reference)["scores"] if reference.exists() else {}
        measured = read(retrained)["geometry"]
        label = geometry.untouched_label(rows, pooling)
        found[pooling] = {"geometry": measured, "sts_avg": scores.get("avg_all"), "label": label}
    return {p: found[p] for p in rows.untouched if p in found}


def retrained_panel(grid: Grid, backbone: str, regime: str, rows: Rows) -> Panel | None:
    """A grid's panel from the retrains of its cells (its planned rows); None where there are none."""
    runs: dict[str, list[Run]] = {}
    for path in sorted((retrained_dir(grid, backbone) / regime).glob("*-seed*.json")):
        cell = read(path)
        runs.setdefault(cell["pooler"], []).append(retrained_run(cell))
    runs = {p: sorted(runs[p], key=lambda r: r.seed) for p in rows.planned if p in runs}
    if not runs:
        return None
    averages = geometry.grid_averages(load_cells(grid.cells_dir(backbone) / regime, rows.order), runs)
    return Panel(backbone, regime, runs, True, {}, averages)


def panels(results: Path, rows: Rows) -> list[Panel]:
    """Each grid's panel: from its own cells where they have the geometry, else from their retrains."""
    grid = Grid(results, results / "work")
    found = []
    for backbone in backbones(results):
        untouched = untouched_rows(grid, backbone, rows)
        for regime in REGIMES:
            p = geometry.panel(grid, backbone, regime, rows) or retrained_panel(grid, backbone, regime, rows)
            if p:
                found.append(p._replace(untouched=untouched))
    return found


def retrained_notes(found: list[Panel], wording: Wording) -> list[str]:
    """What a panel marked *retrained* is, where the report has one."""
    if not any(p.retrained for p in found):
        return []
    return [
        "",
        "Panels marked *retrained* are grids made before these measures, whose cells keep no models:",
        "their poolers were retrained with each cell's own config, overrides and seed",
        f"(`{RETRAIN_COMMAND}`, a finished backfill: commit 06d4c1a has the script), evaluated on the",
        "STS tasks only, and kept in",
        f'`{wording.results}geometry/`. Their "STS avg (these runs)" is the retrained runs\' own;',
        '"STS avg (grid)" is the grid\'s mean over all its seeds, which the correlations use.',
    ]
