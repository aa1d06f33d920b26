"""Issue 36 from the long MLM run to the report, one stage after another, so that one background command
keeps the CPU busy across sessions and no stage starts before the one it depends on has finished.

    nohup python benchmarks/new_backbone_queue.py >> runs/queue.log 2>&1 &     # --dry-run: what is left

1. The long run (`bash benchmarks/pretrain_long_run.sh`) until it exports the backbone with its SOURCE.md.
2. The gate (`budget_probe.py --rule gate`, its budgets and margins fixed before the backbone existed).
   If a regime fails, the queue runs the control, unsupervised SimCSE in plain PyTorch
   (`benchmarks/plain_simcse.py`, `cls` and `mean`, seed 0, the gate's first budget) evaluated as the
   gate's cells are, so the lwap cells of that budget have their plain twins (backbone or trainer?),
   then the diagnosis (plain loop, the same budget with one setting changed: SimCSE's own rate 3e-5,
   then a gentler dropout 0.05; docs/COMPARE.md pre-registers them and how each is read): no grid hours
   in that regime until the cause is found.
3. The grid under the gate's budget in each regime that passed it: the six poolers and issue 37's four
   variants, seed-major with the regimes alternating (seed 0 unsupervised, seed 0 supervised, seed 1 ...),
   so that a queue stopped anywhere leaves both regimes level.
4. `compare_poolers.py report` and `figure` (docs/RESULTS.md, the attention and geometry figures).

Every stage is resumable and skipped once done (the run resumes from its checkpoint or the committed
snapshot; `compare run` skips finished cells), so rerunning the same command picks up where it stopped.
Each stage runs under `nice` with OMP_NUM_THREADS=2 unless set: never two heavy jobs at once.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from lwap.compare.grid import (
    EVAL_MAX_SEQ_LENGTH,
    EVAL_PRECISION,
    PLANNED_SEEDS,
    POOLERS,
    REGIMES,
    backbone_name,
)

REPO = Path(__file__).resolve().parents[1]
BACKBONE = "benchmarks/backbones/bert-prenorm-4l256-sentences"
# Issue 37's variants, as its pre-registration names them (docs/COMPARE.md): A, Q, AQ and AL.
VARIANT_ROWS = ("lwap-attn", "lwap-meanq", "lwap-meanq-attn", "lwap-latent-attn")
ROWS = (*POOLERS, *VARIANT_ROWS)
# The gate's first budget, unsupervised: budget_probe.GATE_BUDGETS["long"] on unsup-minilm.yaml.
CONTROL = ("--lr", "3e-4", "--max-examples", "64000", "--batch", "64", "--max-length", "32")
CONTROL += ("--eval-steps", "50", "--seed", "0", "--precision", "bf16", "--temperature", "0.05")
# After a failed gate, the control with one setting changed (docs/COMPARE.md, "Diagnosis if the gate
# fails"): SimCSE's bert-base rate, at which lwap's trainer raised the MLM proxy's `mean` by 7 points; and
# half SimCSE's dropout, for a backbone pretrained without dropout whose last [CLS] cannot tell two
# masks of one sentence from two sentences at 0.1.
DIAGNOSES = {"lr3e-5": ("--lr", "3e-5"), "dropout0.05": ("--dropout", "0.05")}


class GateFailed(Exception):
    """The gate did not pass in a regime: no grid is run."""


def choice_file(backbone: str, repo: Path = REPO) -> Path:
    return repo / "benchmarks/results/compare/budget" / backbone_name(backbone) / "choice.json"


def read_choice(backbone: str, repo: Path = REPO) -> dict | None:
    path = choice_file(backbone, repo)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def grid_commands(backbone: str, choice: dict, seeds: tuple[int, ...] = PLANNED_SEEDS) -> list[list[str]]:
    """Seed-major, regimes alternating, every row in one budget per regime (the gate's). The gate is per
    regime (its budgets and margins are): a regime that failed it gets no grid, the other keeps its own
    (docs/COMPARE.md, "Diagnosis if the gate fails"); none passed, no grid at all."""
    if choice.get("rule") != "gate":
        raise GateFailed("the gate did not pass (not the gate rule): no grid before the gate")
    passed = tuple(r for r in REGIMES if choice["regimes"][r]["passed"])
    if not passed:
        raise GateFailed("the gate did not pass (no regime passed): no grid before the cause is found")
    commands = []
    for seed in seeds:
        for regime in passed:
            sets = [a for o in choice["regimes"][regime]["set"] for a in ("--set", o)]
            base = ["benchmarks/compare_poolers.py", "run", "--regime", regime, "--backbone", backbone]
            commands.append([*base, "--seeds", str(seed), "--poolers", *ROWS, *sets])
    return commands


def plain_commands(
    backbone: str, repo: Path, label: str, extra: tuple[str, ...] = ()
) -> Iterator[tuple[str, list[str]]]:
    """Plain PyTorch SimCSE at the gate's first budget (unsupervised `long`: lr 3e-4, 64,000 sentences,
    batch 64, length 32, STS-B dev every 50 steps), `extra` options over it, and its evaluation, for `cls`
    and `mean`; each skipped once done. `label` names the folders: `plain-simcse` is the control."""
    name = backbone_name(backbone)
    for pooling in ("cls", "mean"):
        model = f"runs/{label}/{name}/{pooling}"
        scores = f"benchmarks/results/compare/budget/{name}/{label}/{pooling}"
        what = "the control" if label == "plain-simcse" else f"the diagnosis {label.split('/')[-1]}"
        if not (repo / model / "plain_simcse.json").is_file():
            train = [
                "benchmarks/plain_simcse.py",
                "--backbone",
                backbone,
                "--pooling",
                pooling,
                *CONTROL,
                *extra,
            ]
            yield f"{what}: plain {pooling}", [*train, "--out", model, "--overwrite"]
        if not (repo / scores / "results.json").is_file():
            evaluate = ["-m", "lwap", "eval", model, "--tasks", "sts", "--output", scores]
            options = [
                "--precision",
                EVAL_PRECISION,
                "--max-seq-length",
                str(EVAL_MAX_SEQ_LENGTH),
            ]  # as cells
            yield f"{what}: eval {pooling}", [*evaluate, *options]


def control_commands(backbone: str, repo: Path) -> Iterator[tuple[str, list[str]]]:
    """The control, then each diagnosis (`DIAGNOSES`: the control with one setting changed), then their
    table beside lwap's cells (budget/NAME/DIAGNOSIS.md)."""
    yield from plain_commands(backbone, repo, "plain-simcse")
    for label, extra in DIAGNOSES.items():
        yield from plain_commands(backbone, repo, f"diagnosis/{label}", extra)
    yield "the diagnosis table", ["benchmarks/gate_diagnosis.py", "--backbone", backbone]


def stages(backbone: str, repo: Path | None = None) -> Iterator[tuple[str, list[str]]]:
    """(what, command) in order, each read from the disk when its turn comes: the grid's commands exist
    only once the gate has written its choice."""
    repo = repo or REPO
    if not (repo / backbone / "SOURCE.md").is_file():
        yield "the long MLM run", ["bash", "benchmarks/pretrain_long_run.sh"]
    choice = read_choice(backbone, repo)
    if choice is None or choice.get("rule") != "gate":
        yield "the gate", ["benchmarks/budget_probe.py", "--backbone", backbone, "--rule", "gate"]
        choice = read_choice(backbone, repo)  # what the gate just wrote
    if choice is None:
        raise GateFailed(f"{choice_file(backbone, repo)}: the gate wrote no choice")
    if not all(choice["regimes"][r]["passed"] for r in REGIMES):
        yield from control_commands(backbone, repo)
    for command in grid_commands(backbone, choice):
        yield f"grid: {command[3]} seed {command[7]}", command
    yield "the report", ["benchmarks/compare_poolers.py", "report"]
    yield "the figures", ["benchmarks/compare_poolers.py", "figure"]  # layer attention, geometry


def run(command: list[str]) -> int:
    environment = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    program = command if command[0] == "bash" else [sys.executable, *command]
    return subprocess.run(["nice", "-n", "10", *program], cwd=REPO, env=environment).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default=BACKBONE)
    parser.add_argument("--dry-run", action="store_true", help="print the next stage's command and stop")
    a = parser.parse_args(argv)
    try:
        for what, command in stages(a.backbone):
            print(f"[queue] {what}: {' '.join(command)}", flush=True)
            if a.dry_run:
                return 0
            code = run(command)
            if code != 0:
                print(f"[queue] stopped: {what} exited {code}; rerun to resume", flush=True)
                return code
            if what == "the long MLM run" and not (REPO / a.backbone / "SOURCE.md").is_file():
                print("[queue] stopped: the long run ended before its export (a slice); rerun to resume")
                return 0
    except GateFailed as error:
        print(f"[queue] stopped: {error}", flush=True)
        return 1
    print("[queue] done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
