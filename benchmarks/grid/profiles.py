"""Layer-attention profiles for the repository's cells made before cells kept one: attached from the
cell's own `lwap eval` output where it still exists, else measured on a retrain of the cell. A back-fill
of this repository's older grids, run through its wrapper:

    python benchmarks/grid/compare_poolers.py attach-profiles [--backbone B]
    python benchmarks/grid/compare_poolers.py reprofile [--backbone B] [--regimes unsup sup] [--seeds 0 1 2]

Every cell `lwap compare run` makes keeps its profile; nothing here is needed for a new grid.
"""

from __future__ import annotations

import argparse
import os

from lwap.compare import cells as cellfiles
from lwap.compare.cli import add_folders, grid_of
from lwap.compare.grid import REGIMES, Grid, shipped_config
from lwap.compare.runner import evaluate, train
from lwap.compare.settings import code_version

HELP = {
    "attach-profiles": "add LWAP profiles to older cells from their eval output",
    "reprofile": "retrain `lwap` cells without a profile (and without their eval output) to measure it",
}


def add_subcommands(commands: argparse._SubParsersAction, results: str, seeds: tuple[int, ...]) -> None:
    """`attach-profiles` and `reprofile` beside the wrapper's `lwap compare` subcommands."""
    add_folders(commands.add_parser("attach-profiles", help=HELP["attach-profiles"]), results)
    again = commands.add_parser("reprofile", help=HELP["reprofile"])
    add_folders(again, results)
    again.add_argument("--regimes", nargs="+", choices=tuple(REGIMES), default=list(REGIMES))
    again.add_argument("--seeds", type=int, nargs="+", default=list(seeds))


def run(args: argparse.Namespace) -> int:
    """One of the two subcommands, on the grid the folder arguments name."""
    grid = grid_of(args)
    if args.compare_command == "attach-profiles":
        attach_profiles(grid, args.backbone)
    else:
        reprofile(grid, args.backbone, args.regimes, args.seeds)
    return 0


def attach_profiles(grid: Grid, backbone: str) -> None:
    """Add the layer-attention profile to cells made before cells kept it, from the same run's
    `lwap eval` output (WORK/<regime>/<cell>/eval/results.json) — nothing is re-run or re-scored."""
    work = grid.work_dir(backbone)
    for regime in REGIMES:
        for path in sorted((grid.cells_dir(backbone) / regime).glob("*.json")):
            cell = cellfiles.read(path)
            results = work / regime / path.stem / "eval" / "results.json"
            if cell.get("layer_attention") or not results.is_file():
                continue
            profile = cellfiles.layer_attention(cellfiles.read(results))
            if profile:
                cell.update(profile)
                cellfiles.write(path, cell)
                print(f"attached the layer-attention profile to {path}")


def reprofile(grid: Grid, backbone: str, regimes: list[str], seeds: list[int]) -> None:
    """Profiles for `lwap` cells made before cells kept one and whose eval output is gone: retrain each
    such cell (its config, overrides and seed, at this commit) and measure the layer attention on STS-B
    test with the grid's evaluation settings. The cell's scores stay its own; the retrained run's STS-B
    dev and test scores are stored beside the profile, so anyone can see how closely the retrain
    reproduced the cell (same data order and seed; kernels may differ slightly between commits)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = grid.work_dir(backbone)
    for regime in regimes:
        for seed in seeds:
            path = grid.cell_file(backbone, regime, "lwap", seed)
            if not path.is_file():
                continue
            cell = cellfiles.read(path)
            if cell.get("layer_attention"):
                continue
            out = work / regime / f"{path.stem}-reprofile"
            log = out.parent / f"{out.name}.log"
            print(f"[run ] retraining {regime} lwap seed {seed} for its profile -> {out}", flush=True)
            overrides = [*cell.get("variant", []), *cell["overrides"], f"output.dir={out}"]
            train(shipped_config(cell["config"]), overrides, out, log)
            summary = cellfiles.read(out / "train_summary.json")  # STS-B dev: the grid's dev set
            results = evaluate(str(out / "model"), out / "eval", log, tasks="stsb")
            cell.update(cellfiles.layer_attention(results))
            cell["layer_attention_source"] = {
                "retrained_at_commit": code_version(),
                "retrained_best_dev_spearman": summary.get("best_dev_score"),
                "cell_best_dev_spearman": cell["train"]["best_dev_spearman"],
                "retrained_stsb": results["sts"]["stsb"]["score"],
                "cell_stsb": cell["scores"]["stsb"],
            }
            cellfiles.write(path, cell)
            source = cell["layer_attention_source"]
            print(
                f"[ok  ] profile attached to {path}; STS-B test {source['retrained_stsb']:.2f} retrained, "
                f"{source['cell_stsb']:.2f} in the cell",
                flush=True,
            )
