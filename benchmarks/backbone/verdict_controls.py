"""Issue 66's control and seen-ness runs, as docs/COMPARE.md pre-registers them ("Pre-registered: verdicts
with power (issue 66)", paragraphs "The control" and "Seen-ness apart from domain"):

    python benchmarks/backbone/verdict_controls.py prepare        # the arm files U, W, S (a minute)
    nohup nice -n 10 python benchmarks/backbone/verdict_controls.py run >> runs/verdict-controls.log 2>&1 &
    python benchmarks/backbone/verdict_controls.py run --dry-run  # what is left, in order
    python benchmarks/backbone/verdict_controls.py report         # CONTROLS.md from the committed files

**The control** (unsupervised `cls` on bert-prenorm-4l256-sentences at the gate's `long` budget, seeds 0,
1, 2): T, lwap's trainer through the compare engine (cells in results/verdicts/control/trainer/); P, the
plain loop as committed (`plain_simcse.py`), and P+clip, the same with `--clip 1.0`, each saved model
scored as the bar is (`lwap eval --tasks sts`, bf16, 256 tokens) into results/verdicts/control/plain/ and
plain-clip/, its plain_simcse.json (the dev curve, each step's gradient norm) beside. Per seed: T, P,
P+clip. **Seen-ness** (then): lwap's trainer, `mean` and `cls`, seeds 0, 1, 2, on each of the three
4,000-sentence arms (verdict_controls_arms.py), 6 epochs at lr 3e-4, one results folder per arm in
results/verdicts/seen/, each cell's whole `lwap eval` output kept beside (its per-subset scores).

`run` makes one step at a time and skips a step once the file that marks it done exists, so a killed run
resumes where it stopped (a compare cell from its last checkpoint; a plain run starts over). Models and
checkpoints go to outputs/verdicts/ (not tracked); `report` writes results/verdicts/CONTROLS.md with the
pre-registered readings from the tracked files alone (verdict_controls_report.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO
from benchmarks.backbone.budget_probe import GATE_BUDGETS
from benchmarks.backbone.verdict_controls_arms import ARMS, ArmError, check_files, prepare
from benchmarks.backbone.verdict_controls_layout import BACKBONE, SEEDS, SEEN_POOLERS, Layout
from lwap.compare.grid import EVAL_MAX_SEQ_LENGTH, EVAL_PRECISION, Grid
from lwap.compare.runner import Cell

PROG = "verdict_controls.py"
CLIP = "1.0"  # P+clip: Hugging Face's max_grad_norm default, the one suspect named in advance
GATE_LONG = GATE_BUDGETS["long"]["unsup"]  # lr 3e-4, the mirror's first 64,000 Wikipedia sentences
# the plain loop's own defaults, spelled out: the gate's `long` budget, as its committed control ran it
PLAIN_BUDGET = ["--max-examples", "64000", "--lr", "3e-4", "--batch", "64", "--max-length", "32",
                "--epochs", "1", "--eval-steps", "50", "--precision", "bf16"]  # fmt: skip
PLAIN_OPTIONS = {"P": [], "P+clip": ["--clip", CLIP]}
SEEN_EPOCHS = "6"  # 6 × 62 steps of 64 = 372, about (b)'s 398

LAYOUT = Layout(REPO / "benchmarks/results/verdicts", REPO / "outputs/verdicts")
ISSUE50 = REPO / "benchmarks/results/compare/budget/bert-prenorm-4l256-sentences/experiments"
ISSUE50_SNLI = ISSUE50 / "unseen" / "sentences.json"  # (b)'s record: the whole SNLI list's sha256


class StepError(Exception):
    """A step cannot be made as planned (another run holds the lock, a record is gone): one line, exit 2."""


Step = tuple[str, list[str] | Callable[[], None], Path]  # what, a python command or an in-process call, done


def shown(path: Path) -> str:
    """A path as a command names it: relative to the repository root when inside it (what a cell records)."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def compare_cell(grid: Grid, pooler: str, seed: int, sets: list[str]) -> list[str]:
    """One cell of the compare engine (the repository's wrapper, as the grids run): STS tasks only, no
    untouched rows (no reading uses them)."""
    command = ["benchmarks/grid/compare_poolers.py", "run", "--results", shown(grid.results)]
    command += ["--work-dir", shown(grid.work), "--backbone", BACKBONE, "--regime", "unsup"]
    command += ["--seeds", str(seed), "--poolers", pooler, "--tasks", "sts", "--no-untouched"]
    return command + [a for s in sets for a in ("--set", s)]


def score_command(model: Path, out: Path) -> list[str]:
    """`lwap eval` as every grid cell is scored (the bar's settings), each STS pair's cosine kept too."""
    command = ["-m", "lwap", "eval", shown(model), "--tasks", "sts", "--precision", EVAL_PRECISION]
    command += ["--max-seq-length", str(EVAL_MAX_SEQ_LENGTH), "--output", shown(out)]
    return [*command, "--pair-scores", "--no-progress"]


def copy_file(source: Path, target: Path) -> None:
    """Copy a record the run left in outputs/ into the tracked results (its own step, so that a run
    stopped after the training still copies it when it resumes)."""
    if not source.is_file():
        raise StepError(f"{source}: missing, so {target.name} cannot be kept (outputs/ cleaned?); remove "
                        "the file that marks the step before this one done, and run again")  # fmt: skip
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def seen_sets(layout: Layout, arm: str) -> list[str]:
    """The seen-ness budget: `compare/unsup-minilm` with the arm's file, all of it, 6 epochs, lr 3e-4
    (`data.max_examples=null` is YAML's null: every line)."""
    return ["training.learning_rate=3e-4", f"data.train={shown(layout.arm_file(arm))}",
            "data.max_examples=null", f"training.epochs={SEEN_EPOCHS}"]  # fmt: skip


def control_steps(layout: Layout) -> Iterator[Step]:
    trainer = layout.trainer_grid()
    for seed in SEEDS:
        yield (
            f"control seed {seed}: T (lwap's trainer)",
            compare_cell(trainer, "cls", seed, GATE_LONG),
            trainer.cell_file(BACKBONE, "unsup", "cls", seed),
        )
        for run, options in PLAIN_OPTIONS.items():
            model, scores = layout.plain_model(run, seed), layout.plain_scores(run, seed)
            train = ["benchmarks/backbone/plain_simcse.py", "--backbone", BACKBONE, "--pooling", "cls"]
            train += ["--seed", str(seed), *PLAIN_BUDGET, *options, "--out", shown(model), "--overwrite"]
            yield f"control seed {seed}: {run} train", train, model / "plain_simcse.json"
            yield f"control seed {seed}: {run} score", score_command(model, scores), scores / "results.json"
            record = partial(copy_file, model / "plain_simcse.json", scores / "plain_simcse.json")
            yield f"control seed {seed}: {run} record", record, scores / "plain_simcse.json"


def seen_steps(layout: Layout) -> Iterator[Step]:
    for seed in SEEDS:
        for arm in ARMS:
            grid = layout.seen_grid(arm)
            for pooler in SEEN_POOLERS:
                what = f"seen-ness seed {seed}: {arm} {pooler}"
                cell = grid.cell_file(BACKBONE, "unsup", pooler, seed)
                yield what, compare_cell(grid, pooler, seed, seen_sets(layout, arm)), cell
                evaluated = Cell(grid, BACKBONE, "unsup", pooler, seed).out / "eval" / "results.json"
                kept = layout.seen_eval(arm, pooler, seed)
                yield f"{what}: per-subset scores", partial(copy_file, evaluated, kept), kept


def steps(layout: Layout) -> Iterator[Step]:
    """(what, the python command or in-process call, the file that marks it done), in the pre-registered
    order: the arm files first (a minute, so a mirror that gives other files stops the run before any
    training), then the control (T, P, P+clip per seed), then seen-ness (seed by seed, U, W, S)."""
    make_arms = partial(prepare, REPO / BACKBONE, layout.work / "seen", layout.arm_record(), ISSUE50_SNLI)
    yield "seen-ness: the arm files U, W, S", make_arms, layout.arm_file(ARMS[-1])
    yield from control_steps(layout)
    yield from seen_steps(layout)


def run(dry_run: bool, layout: Layout) -> int:
    """Each step not done yet, in order, one at a time; then the report."""
    from lwap.checks.locking import claim

    if dry_run:
        left = [what for what, _, done in steps(layout) if not done.is_file()]
        print("".join(f"[todo] {what}\n" for what in left) + f"{len(left)} steps left", flush=True)
        return 0
    if layout.arm_record().is_file() and layout.arm_file(ARMS[-1]).is_file():
        check_files(layout.work / "seen", layout.arm_record())  # before hours are spent on them
    os.environ.setdefault("OMP_NUM_THREADS", "2")  # as the grids' cells ran (verdict_cells.sh)
    layout.work.mkdir(parents=True, exist_ok=True)
    lock = layout.work / "verdict-controls.lock"
    with claim(lock) as mine:
        if not mine:
            raise StepError(f"{lock}: another `{PROG} run` is making these steps")
        for what, command, done in steps(layout):
            if done.is_file():
                continue
            print(f"[run ] {what}", flush=True)
            if callable(command):
                command()
            else:
                subprocess.run([sys.executable, *command], check=True, cwd=REPO)
    write_report(layout)
    return 0


def write_report(layout: Layout) -> str:
    from benchmarks.backbone.verdict_controls_report import report

    text = report(layout, BACKBONE)
    layout.report().parent.mkdir(parents=True, exist_ok=True)
    layout.report().write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("prepare", help="write the arm files U, W, S and check them against the record")
    sub.add_parser("run", help="the steps not done yet, in order").add_argument(
        "--dry-run", action="store_true", help="list what is left"
    )
    sub.add_parser("report", help=f"write {shown(LAYOUT.report())} from the committed files")
    a = parser.parse_args(argv)
    from lwap.errors import LwapError

    try:
        if a.command == "prepare":
            record = prepare(REPO / BACKBONE, LAYOUT.work / "seen", LAYOUT.arm_record(), ISSUE50_SNLI)
            counts = ", ".join(f"{arm} {record['arms'][arm]['sentences']:,}" for arm in ARMS)
            folder, record_file = shown(LAYOUT.work / "seen"), shown(LAYOUT.arm_record())
            print(f"wrote {folder}/{{U,W,S}}.txt ({counts}); the record: {record_file}")
            return 0
        if a.command == "run":
            return run(a.dry_run, LAYOUT)
        print(write_report(LAYOUT), end="")
    except (ArmError, StepError, LwapError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as error:
        failed = " ".join(map(str, error.cmd))
        print(f"{PROG}: error: a step failed (exit {error.returncode}): {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
