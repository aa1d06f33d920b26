"""Layer-attention profiles for cells made before cells kept one: attached from the cell's own `lwap eval`
output where it still exists, else measured on a retrain of the cell."""

from __future__ import annotations

import os

from lwap.compare import cells as cellfiles
from lwap.compare.grid import REGIMES, Grid, shipped_config
from lwap.compare.runner import evaluate, train
from lwap.compare.settings import code_version


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
            summary = cellfiles.read(out / "train_summary.json")
            results = evaluate(str(out / "model"), out / "eval", log, tasks="stsb")
            cell.update(cellfiles.layer_attention(results))
            cell["layer_attention_source"] = {
                "retrained_at_commit": code_version(),
                "retrained_best_dev_spearman": summary.get("best_dev_spearman"),
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
