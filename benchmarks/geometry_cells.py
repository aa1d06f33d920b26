"""Alignment, uniformity and anisotropy of the pooler grids made before `lwap eval` measured them.

    python benchmarks/geometry_cells.py run --backbone sentence-transformers/all-MiniLM-L6-v2
    python benchmarks/geometry_cells.py run --backbone ../shared/models/minilm-l6-mlm
    python benchmarks/geometry_cells.py run --backbone ... --regime sup [--seeds 0 1 2] [--poolers lwap cls]
    python benchmarks/compare_poolers.py report    # docs/RESULTS.md's geometry section (and the others)
    python benchmarks/compare_poolers.py figure    # docs/alignment_uniformity.png (and the attention figure)

Those grids' cells (benchmarks/results/compare/...) keep only their scores, not their models. `run`
retrains seeds (0 unless --seeds) of the poolers of one regime's grid (unsup unless --regime) with exactly
the committed cell's config file and overrides (`lwap train CONFIG --set ...` as the grid ran it),
evaluates the saved model on the 7 STS tasks with the grid's precision and length (SciFact is left out:
the geometry needs only STS-B test), and writes one small JSON per cell to
benchmarks/results/compare/geometry/<backbone>/<regime>/<pooler>-seed<N>.json: config, overrides,
commit, settings, the retrained cell's own STS scores, its geometry and its STS-B dev trajectory. The
untouched rows (the backbone with no training, as the grid's reference rows) become
untouched-<pooling>.json. Finished cell files are skipped, a stopped training resumes from its last
checkpoint: rerunning the same command continues. Run one process per core, each with OMP_NUM_THREADS=1.
Grids run since then record the geometry in their own cells (`lwap compare run`); the report
(lwap.compare.geometry) reads those first and these retrained cells for the older grids.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lwap.compare.cells import write as write_cell
from lwap.compare.grid import BACKBONE as DEFAULT_BACKBONE
from lwap.compare.grid import STS_COLUMNS, Grid, backbone_name
from lwap.compare.runner import untouched_model
from lwap.compare.settings import code_version
from lwap.eval.geometry import MEASURES

REPO = Path(__file__).resolve().parents[1]
COMPARE = REPO / "benchmarks" / "results" / "compare"
GEOMETRY = COMPARE / "geometry"
BACKBONES = (DEFAULT_BACKBONE, "../shared/models/minilm-l6-mlm")
REGIMES = ("unsup", "sup")
POOLERS = ("lwap", "cls", "mean", "weighted", "first_last_avg", "last2_avg")  # the cheap-to-read ones first


def committed_dir(backbone: str) -> Path:
    """The grid's own folder for a backbone, as `lwap compare` lays it out."""
    return Grid(COMPARE, COMPARE / "work").cells_dir(backbone)


def geometry_dir(backbone: str, regime: str) -> Path:
    return GEOMETRY / backbone_name(backbone) / regime


def run_logged(command: list[str], log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        result = subprocess.run(command, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        sys.exit(f"command failed (exit {result.returncode}); see {log}: {' '.join(command)}")


def evaluate(model: str, out: Path, log: Path, cell: dict[str, Any], tasks: str = "sts") -> dict[str, Any]:
    """`lwap eval` on `tasks` at the committed cell's precision and length."""
    command = [
        sys.executable,
        "-m",
        "lwap",
        "eval",
        model,
        "--tasks",
        tasks,
        "--output",
        str(out),
        "--no-progress",
    ]
    command += ["--precision", cell["eval_precision"], "--max-seq-length", str(cell["eval_max_seq_length"])]
    run_logged(command, log)
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def sts_scores(results: dict[str, Any]) -> dict[str, float]:
    row = {task: entry["score"] for task, entry in results["sts"].items()}
    if all(task in row for task in STS_COLUMNS):
        row["avg_all"] = sum(row[t] for t in STS_COLUMNS) / len(STS_COLUMNS)
    return row


def settings(results: dict[str, Any], cell: dict[str, Any], tasks: str) -> dict[str, Any]:
    return {
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "eval_precision": cell["eval_precision"],
        "eval_max_seq_length": cell["eval_max_seq_length"],
        "eval_tasks": tasks,
        "versions": results["versions"],
    }


def restart_flags(out: Path) -> list[str]:
    from lwap.train.outputs import latest_complete_checkpoint

    if latest_complete_checkpoint(out):
        return ["--resume"]
    return ["--overwrite"] if out.exists() else []


def run_cell(backbone: str, regime: str, pooler: str, seed: int, work: Path) -> None:
    source = committed_dir(backbone) / regime / f"{pooler}-seed{seed}.json"
    target = geometry_dir(backbone, regime) / source.name
    if target.exists():
        print(f"[done] {backbone_name(backbone)} {regime} {pooler} seed {seed}", flush=True)
        return
    committed = json.loads(source.read_text(encoding="utf-8"))
    out = work / regime / f"{pooler}-seed{seed}"
    log = work / regime / f"{pooler}-seed{seed}.log"
    overrides = [*committed["overrides"], f"output.dir={out}"]
    print(f"[run ] {backbone_name(backbone)} {regime} {pooler} seed {seed} -> {out}", flush=True)
    started = time.perf_counter()
    if not (out / "model" / "modules.json").is_file():
        command = [sys.executable, "-m", "lwap", "train", committed["config"]]
        run_logged([*command, *(a for o in overrides for a in ("--set", o)), *restart_flags(out)], log)
    train_seconds = time.perf_counter() - started
    summary = json.loads((out / "train_summary.json").read_text(encoding="utf-8"))
    tick = time.perf_counter()
    results = evaluate(str(out / "model"), out / "eval", log, committed)
    cell = {
        "regime": regime,
        "pooler": pooler,
        "seed": seed,
        "backbone": backbone,
        "config": committed["config"],
        "overrides": committed["overrides"],
        "retrains": str(source.relative_to(REPO)),
        "commit": code_version(),
        "settings": settings(results, committed, "sts (SciFact left out: the geometry needs STS-B test)"),
        "train_wall_seconds": round(train_seconds, 1),
        "eval_wall_seconds": round(time.perf_counter() - tick, 1),
        "train": {
            k: summary.get(k) for k in ("steps", "dev_spearman_before", "best_dev_spearman", "best_step")
        },
        "scores": sts_scores(results),
        "geometry": results["geometry"],
        "dev_geometry": dev_trajectory(out),
    }
    write_cell(target, cell)
    print(
        f"[ok  ] {regime} {pooler} seed {seed}: avg {cell['scores']['avg_all']:.2f}, "
        f"{geometry_line(cell['geometry'])}",
        flush=True,
    )


def dev_trajectory(out: Path) -> list[dict[str, float]]:
    """(step, dev Spearman, geometry) of every STS-B dev evaluation that logged the geometry."""
    path = out / "metrics.csv"
    if not path.is_file():
        return []
    import csv

    steps: dict[int, dict[str, float]] = {}
    prefix = "eval_stsb-dev_"
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            name = row["metric"]
            if name.startswith(prefix) and name[len(prefix) :] in (*MEASURES, "spearman_cosine"):
                steps.setdefault(int(row["step"]), {})[name[len(prefix) :]] = float(row["value"])
    return [{"step": step, **values} for step, values in sorted(steps.items()) if "alignment" in values]


def geometry_line(geometry: dict[str, Any]) -> str:
    return ", ".join(f"{m} {geometry[m]:.3f}" for m in MEASURES)


def untouched_poolings(backbone: str) -> list[str]:
    """The grid's untouched rows for this backbone (mean; also cls and first_last_avg for a plain encoder)."""
    folder = committed_dir(backbone)
    found = ["mean"] if (folder / "untouched-backbone.json").is_file() else []
    return found + [p for p in ("cls", "first_last_avg") if (folder / f"untouched-{p}.json").is_file()]


def untouched_source(backbone: str, pooling: str) -> Path:
    return Grid(COMPARE, COMPARE / "work").reference_file(backbone, pooling)


def run_untouched(backbone: str, work: Path) -> None:
    """Untouched rows: STS-B test only. The model is the committed row's own (no training, no seed), so its
    other scores are the committed ones; its STS-B score checks that (`committed_stsb`)."""
    for pooling in untouched_poolings(backbone):
        target = GEOMETRY / backbone_name(backbone) / f"untouched-{pooling}.json"
        if target.exists():
            continue
        committed = json.loads(untouched_source(backbone, pooling).read_text(encoding="utf-8"))
        tick = time.perf_counter()
        model = untouched_model(backbone, work, pooling)
        log = work / f"untouched-{pooling}.log"
        results = evaluate(model, work / f"untouched-{pooling}" / "eval", log, committed, tasks="stsb")
        cell = {
            "model": f"{backbone} ({pooling} pooling, no training)",
            "backbone": backbone,
            "pooling": pooling,
            "retrains": str(untouched_source(backbone, pooling).relative_to(REPO)),
            "commit": code_version(),
            "settings": settings(results, committed, "stsb (the other scores: the committed row's)"),
            "eval_wall_seconds": round(time.perf_counter() - tick, 1),
            "scores": sts_scores(results),
            "committed_stsb": committed["scores"]["stsb"],
            "geometry": results["geometry"],
        }
        write_cell(target, cell)
        print(f"[ok  ] untouched {pooling}: {geometry_line(cell['geometry'])}", flush=True)


def command_run(args: argparse.Namespace) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(args.work_dir).resolve() / backbone_name(args.backbone)
    run_untouched(args.backbone, work)
    for seed in args.seeds:
        for pooler in args.poolers:
            run_cell(args.backbone, args.regime, pooler, seed, work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="retrain a seed of every pooler of one backbone's grid")
    run.add_argument("--backbone", default=DEFAULT_BACKBONE, choices=BACKBONES)
    run.add_argument("--regime", default="unsup", choices=REGIMES)
    run.add_argument("--seeds", type=int, nargs="+", default=[0])
    run.add_argument("--poolers", nargs="+", default=list(POOLERS), choices=POOLERS)
    run.add_argument("--work-dir", default=str(REPO / "outputs" / "geometry"))
    args = parser.parse_args()
    command_run(args)


if __name__ == "__main__":
    main()
