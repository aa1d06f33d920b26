"""What lwap's depth loss costs a training step: plain SimCSE against depth-elastic, on one grid's budget.

    python benchmarks/elastic/step_cost.py [--grid all-MiniLM-L6-v2/unsup] [--poolers mean lwap]
                                           [--rounds 2] [--steps 5]

The frontier's `-ordinary` and `-elastic` rows of a pooler differ only in `objective.depths=[1..L]`
(frontier_grid.py). Each (pooler, row) is timed in its own process, so that nothing one builds changes the
other's timing, in alternating rounds, so that a change of the machine's load falls on both: the process
builds the trainer `lwap train` runs (lwap.train.build_trainer, no checkpoints), takes its first batch and
times forward + backward of the trainer's loss under the trainer's autocast, `steps` times after one
warm-up. Prints a Markdown table of the median seconds a step and their ratio. Time is the machine's:
measure with nothing else running. docs/COMPARE.md ("the elastic frontier", cost) quotes it.
benchmarks/speed/speedbench times whole `trainer.train()` steps of variants fixed to configs/quickstart.yaml
(optimizer, data loading and callbacks included); this asks only what the loss adds, on a grid's budget.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.elastic.frontier_grid import REPO, find_grids

MODES = ("ordinary", "elastic")


def time_steps(config_path: str, overrides: list[str], out: Path, steps: int) -> list[float]:
    """Seconds of `steps` forward + backward passes of the configured trainer's loss on its first batch."""
    from lwap.train import build_trainer, load_config, training_inputs

    sets = [*overrides, "eval.dev=null", "eval.keep_best=false", "eval.before_training=false"]
    config = load_config(config_path, sets)
    built = build_trainer(config, out, inputs=training_inputs(config, out, checkpoints=False))
    trainer = built.trainer
    batch = trainer._prepare_inputs(next(iter(trainer.get_train_dataloader())))
    trainer.model.train()

    def once() -> float:
        tick = time.perf_counter()
        with trainer.autocast_smart_context_manager():
            loss = trainer.compute_loss(trainer.model, batch)
        loss.backward()
        trainer.model.zero_grad()
        return time.perf_counter() - tick

    once()  # warm-up
    return [once() for _ in range(steps)]


def measure(grid_name: str, poolers: list[str], rounds: int, steps: int, work: Path) -> list[str]:
    """The Markdown table: each pooler's ordinary and elastic step, timed in child processes."""
    grid = find_grids([grid_name])[0]
    seconds: dict[tuple[str, str], list[float]] = {(p, m): [] for p in poolers for m in MODES}
    for _ in range(rounds):
        for pooler in poolers:
            for mode in MODES:
                child = [sys.executable, __file__, "--child", grid_name, pooler, mode, str(steps), str(work)]
                done = subprocess.run(child, capture_output=True, text=True, cwd=REPO, check=False)
                if done.returncode != 0:
                    raise SystemExit(f"step_cost.py: {pooler} {mode} failed:\n{done.stderr[-2000:]}")
                seconds[pooler, mode] += json.loads(done.stdout.strip().splitlines()[-1])
    lines = [
        f"{grid.name}/{grid.regime}, {rounds} rounds × {steps} steps (median seconds a step):",
        "",
        "| pooler | ordinary | elastic (depths 1..L) | elastic / ordinary |",
        "| --- | ---: | ---: | ---: |",
    ]
    for pooler in poolers:
        plain, elastic = (statistics.median(seconds[pooler, m]) for m in MODES)
        lines.append(f"| {pooler} | {plain:.2f} | {elastic:.2f} | {elastic / plain:.2f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        grid_name, pooler, mode, steps, work = argv[1:6]
        grid = find_grids([grid_name])[0]
        overrides = grid.overrides(pooler, mode, 0)
        found = time_steps(grid.config, overrides, Path(work) / f"{pooler}-{mode}", int(steps))
        print(json.dumps(found))
        return 0
    parser = argparse.ArgumentParser(prog="step_cost.py", description=__doc__.splitlines()[0])
    parser.add_argument("--grid", default="all-MiniLM-L6-v2/unsup")
    parser.add_argument("--poolers", nargs="+", default=["mean", "lwap"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("outputs/elastic-step-cost"))
    args = parser.parse_args(argv)
    print("\n".join(measure(args.grid, args.poolers, args.rounds, args.steps, args.work.resolve())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
