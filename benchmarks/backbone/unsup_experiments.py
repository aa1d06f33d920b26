"""Issue 50's experiments on the unsupervised failure of bert-prenorm-4l256-sentences, as docs/COMPARE.md
pre-registers them ("The paper's claims measured fairly", item 4):

    nohup nice python benchmarks/backbone/unsup_experiments.py run >> runs/unsup-experiments.log 2>&1 &
    python benchmarks/backbone/unsup_experiments.py report     # EXPERIMENTS.md from what is done so far
    python benchmarks/backbone/unsup_experiments.py run --dry-run   # what is left, in order

(b) **Unseen sentences**: the plain loop (`plain_simcse.py`, `cls` and `mean`, seed 0, the gate's first
budget but for the data) on S, every distinct SNLI sentence of the mirror no evaluation set holds, and on
W, as many of the mirror's Wikipedia sentences (its first lines, the ones the gate's runs read), one epoch
each. (a) **Dropout adaptation**: MLM continued from the shipped backbone for 8 M tokens at dropout 0.1 and
at 0 (`pretrain_mlm.py --init-from`, everything else equal), then on each arm its untouched rows, lwap's
trainer (`cls`, `mean`, the gate's `long` budget) and the plain loop.

Each step is skipped once its output exists, so a killed run resumes where it stopped (the MLM arms from
their last checkpoint). Arms are exported to runs/arms/NAME (not tracked: an arm ships only if it passes);
the scores, each plain run's STS-B dev curve and each arm's SOURCE.md are kept under
benchmarks/results/compare/budget/bert-prenorm-4l256-sentences/experiments/ (tracked), and `report`
remakes EXPERIMENTS.md there from those files alone.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import random
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO
from benchmarks.backbone.budget_probe import GATE_BUDGETS, GATE_MARGINS
from benchmarks.backbone.gate_diagnosis import CLEARS_WORDS, clears, lwap_row, plain_row, row_cells
from benchmarks.backbone.mlm_data import evaluation_sentences, normalise
from benchmarks.grid.study import UNTOUCHED
from lwap.compare.cells import read
from lwap.compare.grid import Grid, backbone_name
from lwap.paths import data_dir

BACKBONE = "benchmarks/backbones/bert-prenorm-4l256-sentences"
NAME = backbone_name(BACKBONE)
RESULTS = REPO / "benchmarks/results/compare/budget" / NAME / "experiments"
RUNS = REPO / "runs" / "unsup-experiments"
POOLINGS = ("cls", "mean")
BAR = 51.77  # the shipped backbone's gate bar: every untouched row + 5 on Avg. (all) (its gate's table)
# the shipped backbone's own recipe (its SOURCE.md), but the rate: a tenth of its peak, for 8 M tokens
ARM_RECIPE = ["--size", "4l256", "--arch", "prenorm", "--lr", "1e-4", "--batch", "150", "--seq-len", "128",
              "--rows", "sentence", "--group-by-length", "--clip", "0.5", "--max-tokens", "8000000",
              "--warmup-frac", "0.02", "--eval-steps", "400", "--init-from", BACKBONE]  # fmt: skip
ARMS = {"dropout0.1": "0.1", "dropout0": "0"}
GATE_LONG = GATE_BUDGETS["long"]["unsup"]


def arm_folder(arm: str) -> str:
    return f"runs/arms/{NAME}-{arm}"


def unseen_files() -> tuple[Path, Path]:
    return RUNS / "unseen" / "snli.txt", RUNS / "unseen" / "wiki.txt"


def unseen_snli(mirror: Path, evaluation: set[str]) -> tuple[list[str], int]:
    """S: every distinct premise and hypothesis of the mirror's SNLI pairs that no evaluation set holds
    (`evaluation`: normalised sentences), shuffled with seed 0; and how many distinct ones there were.
    Issue 66's seen-ness arm S is its first 4,000 (verdict_controls.py)."""
    distinct: dict[str, None] = {}
    with gzip.open(mirror / "nli" / "snli_dev_test_pairs.tsv.gz", "rt", encoding="utf-8") as handle:
        rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(rows)  # split, premise, hypothesis, label
        for row in rows:
            for sentence in (row[1].strip(), row[2].strip()):
                distinct.setdefault(sentence, None)
    snli = [s for s in distinct if s and normalise(s) not in evaluation]
    random.Random(0).shuffle(snli)
    return snli, len(distinct)


def write_unseen_sentences() -> dict:
    """S (SNLI, no evaluation sentence, shuffled with seed 0) and W (as many of the mirror's first
    Wikipedia lines): two files for plain_simcse.py --train, and what they hold."""
    mirror = data_dir()
    held, _ = evaluation_sentences(mirror)  # normalised: case, punctuation and whitespace folded
    snli, distinct = unseen_snli(mirror, held)
    wiki = []
    with gzip.open(mirror / "wiki" / "wiki_sentences_1m.txt.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                wiki.append(line.rstrip("\n"))
            if len(wiki) == len(snli):
                break
    record = {"snli_distinct": distinct, "snli_removed_as_evaluation": distinct - len(snli)}
    for path, sentences in zip(unseen_files(), (snli, wiki), strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(sentences) + "\n"
        path.write_text(text, encoding="utf-8")
        record[path.stem] = {"sentences": len(sentences), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    return record


def plain_steps(label: str, backbone: str, extra: list[str]) -> Iterator[tuple[str, list[str], Path]]:
    """The plain loop's `cls` and `mean` on `backbone`, each scored on the STS tasks into RESULTS/label/."""
    for pooling in POOLINGS:
        model = RUNS / label / pooling
        train = ["benchmarks/backbone/plain_simcse.py", "--backbone", backbone, "--pooling", pooling]
        yield (
            f"{label} {pooling}: train",
            [*train, "--out", str(model), "--overwrite", *extra],
            model / "plain_simcse.json",
        )
        scores = RESULTS / label / pooling
        evaluate = ["-m", "lwap", "eval", str(model), "--tasks", "sts", "--output", str(scores)]
        yield f"{label} {pooling}: eval", [*evaluate, "--no-progress"], scores / "results.json"


def write_unseen_record(done: Path) -> None:
    """The two sentence files, and what they hold beside the scores."""
    record = write_unseen_sentences()
    done.parent.mkdir(parents=True, exist_ok=True)
    done.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def copy_arm_record(arm: str) -> None:
    """The arm's SOURCE.md and loss curve, kept beside its scores (the weights stay in runs/). Its own
    step, so that a run stopped after the MLM still copies them when it resumes."""
    for name in ("SOURCE.md", "loss_curve.csv"):
        target = RESULTS / "arms" / arm / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / arm_folder(arm) / name, target)


Step = tuple[str, list[str] | Callable[[], None], Path]  # what, a python command or an in-process call, done


def steps() -> Iterator[Step]:
    """(what, the python command or in-process call, the file that marks it done), in the order
    docs/COMPARE.md pre-registers: (b), then (a)."""
    record = RESULTS / "unseen" / "sentences.json"
    yield "unseen sentences: the two files", partial(write_unseen_record, record), record
    snli, wiki = unseen_files()
    count = json.loads(record.read_text())["snli"]["sentences"] if record.is_file() else 0
    for arm, path in (("unseen/snli", snli), ("unseen/wiki", wiki)):
        yield from plain_steps(arm, BACKBONE, ["--train", str(path), "--max-examples", str(count)])
    for arm, dropout in ARMS.items():
        folder = arm_folder(arm)
        mlm = ["benchmarks/backbone/pretrain_mlm.py", "--name", f"{NAME}-{arm}", *ARM_RECIPE]
        mlm += ["--dropout", dropout, "--run-dir", f"runs/pretrain/{NAME}-{arm}", "--out", folder]
        yield f"arm {arm}: MLM", mlm, REPO / folder / "SOURCE.md"
        yield (
            f"arm {arm}: its record",
            partial(copy_arm_record, arm),
            RESULTS / "arms" / arm / "loss_curve.csv",
        )
        grid = Grid(RESULTS / "arms" / arm, RUNS / "arms" / arm)
        cells = ["-m", "lwap", "compare", "run", "--results", str(grid.results), "--work-dir", str(grid.work)]
        cells += ["--backbone", folder, "--regime", "unsup", "--seeds", "0", "--poolers", *POOLINGS]
        cells += ["--tasks", "sts", *(a for o in GATE_LONG for a in ("--set", o))]
        yield f"arm {arm}: lwap's cells", cells, grid.cell_file(folder, "unsup", "mean", 0)
        yield from plain_steps(f"arms/{arm}/plain", folder, [])


def run(dry_run: bool) -> int:
    for what, command, done in steps():
        if done.is_file():
            continue
        print(f"[{'todo' if dry_run else 'run '}] {what}", flush=True)
        if dry_run:
            continue
        if callable(command):
            command()
        else:
            subprocess.run([sys.executable, *command], check=True, cwd=REPO)
    if not dry_run:
        write_report()
    return 0


def cells_of(label: str, lwap_grid: tuple[Grid, str] | None) -> dict[str, dict | None]:
    rows = {p: plain_row(RESULTS, RUNS, label, p, "") for p in POOLINGS}
    if lwap_grid is not None:
        grid, backbone = lwap_grid
        rows |= {f"lwap {p}": lwap_row(grid, backbone, p) for p in POOLINGS}
    return rows


def report() -> str:
    lines = [
        f"# Issue 50's experiments on {NAME}'s unsupervised failure",
        "",
        "Made by `python benchmarks/backbone/unsup_experiments.py report` (the plan and how it is read:",
        'docs/COMPARE.md, "The paper\'s claims measured fairly", item 4). Unsupervised SimCSE, seed 0; Avg.',
        "(all): the seven STS tasks, Spearman × 100; STS-B dev × 100 at step 0 → the kept step; at the last.",
        "",
        "## (b) Unseen sentences: SNLI (S) against as many Wikipedia sentences (W), the plain loop",
        "",
    ]
    record_file = RESULTS / "unseen" / "sentences.json"
    if record_file.is_file():
        record = json.loads(record_file.read_text(encoding="utf-8"))
        snli, wiki = record["snli"]["sentences"], record["wiki"]["sentences"]
        lines += [
            f"S: {snli:,} sentences ({record['snli_distinct']:,} distinct in the mirror's SNLI pairs, "
            f"{record['snli_removed_as_evaluation']} in an evaluation set); W: the mirror's first {wiki:,} "
            f"Wikipedia lines. The bar: {BAR:.2f} (every untouched row of the shipped backbone + 5).",
            "",
        ]
    lines += ["| run | `cls` Avg. (all) | `cls` STS-B dev | `mean` Avg. (all) | `mean` STS-B dev |"]
    lines += ["| --- | --- | --- | --- | --- |"]
    for label, words in (("unseen/snli", "S: SNLI, unseen"), ("unseen/wiki", "W: Wikipedia, seen ~4.7×")):
        rows = cells_of(label, None)
        lines.append(f"| {words} | {' | '.join(row_cells(rows, POOLINGS))} |")
    lines += ["", "## (a) Dropout adaptation: 8 M more MLM tokens at dropout 0.1 and at 0", ""]
    lines += [arm_losses(), ""]
    lines += ["| arm | untouched rows (mean / [CLS] / first-last) | bar (+5) | run | `cls` Avg. (all) | "
              "`cls` STS-B dev | `mean` Avg. (all) | `mean` STS-B dev | both clear the bar |"]  # fmt: skip
    lines += ["|" + " --- |" * 9]
    passed: dict[str, bool | None] = {}
    for arm in ARMS:
        grid, folder = Grid(RESULTS / "arms" / arm, RUNS / "arms" / arm), arm_folder(arm)
        try:
            untouched = [read(grid.reference_file(folder, p))["scores"]["avg_all"] for p in UNTOUCHED]
        except Exception:  # not measured yet
            untouched = []
        bar = max(untouched) + GATE_MARGINS["unsup"] if untouched else None
        shown = " / ".join(f"{u:.2f}" for u in untouched) or "not run yet"
        for run_label, rows in (
            ("lwap's trainer (`long`)", {p: lwap_row(grid, folder, p) for p in POOLINGS}),
            ("plain loop", {p: plain_row(RESULTS, RUNS, f"arms/{arm}/plain", p, "") for p in POOLINGS}),
        ):
            cleared = clears(rows, bar)
            passed.setdefault(arm, cleared)  # an arm passes by lwap's trainer, the first run listed
            verdict = CLEARS_WORDS[cleared]
            bar_text = f"{bar:.2f}" if bar is not None else "—"
            lines.append(
                f"| {arm} | {shown} | {bar_text} | {run_label} | {' | '.join(row_cells(rows, POOLINGS))} "
                f"| {verdict} |"
            )
    lines += [
        "",
        "## The reading, as pre-registered",
        "",
        f"- {reading_unseen()}",
        f"- {reading_dropout(passed)}",
        "",
        next_step(passed),
    ]
    return "\n".join(lines) + "\n"


def final_held_out_loss(curve: Path) -> float | None:
    """The last held-out MLM loss of a pretraining run's loss_curve.csv (None before its first)."""
    if not curve.is_file():
        return None
    with curve.open(encoding="utf-8", newline="") as handle:
        losses = [row["held_out_loss"] for row in csv.DictReader(handle) if row["held_out_loss"]]
    return float(losses[-1]) if losses else None


def arm_losses() -> str:
    """Each arm's MLM against the shipped backbone's, said beside the reading: the arm's MLM head starts
    fresh (the shipped folder keeps the encoder only), so its held-out loss is not the shipped one's."""
    shipped = final_held_out_loss(REPO / BACKBONE / "loss_curve.csv")
    arms = {arm: final_held_out_loss(RESULTS / "arms" / arm / "loss_curve.csv") for arm in ARMS}
    shown = ", ".join(
        f"{arm} {loss:.2f}" if loss is not None else f"{arm} not run yet" for arm, loss in arms.items()
    )
    return (
        "Each arm continues MLM from the shipped backbone (lr 1e-4, 8 M tokens, `pretrain_mlm.py "
        "--init-from`; the command is in the arm's SOURCE.md; only the dropout differs). Held-out MLM "
        f"loss at the arm's end: {shown}; the shipped backbone's: "
        f"{shipped:.2f}. The arm's MLM head starts fresh (the shipped folder keeps the encoder only) and "
        "8 M tokens at this rate do not bring its loss back; each arm is read against its own untouched "
        "rows + 5."
    )


def reading_unseen() -> str:
    """(b), read as docs/COMPARE.md wrote it down before the runs."""
    s, w = cells_of("unseen/snli", None), cells_of("unseen/wiki", None)
    if not all(s.values()) or not all(w.values()):
        return "(b) Unseen sentences: not read yet (runs missing)."
    gap = {p: s[p]["avg_all"] - w[p]["avg_all"] for p in POOLINGS}  # type: ignore[index]
    gaps = f"S − W: {', '.join(f'`{p}` {d:+.2f}' for p, d in gap.items())}"
    if clears(s, BAR):
        found = f"S clears the bar ({BAR:.2f}) with both poolers ({gaps})"
        return f"(b) {found}: the training sentences were the cause."
    if all(d > 2 for d in gap.values()):
        found = f"S misses the bar but is more than 2 points above W with both poolers ({gaps})"
        return f"(b) {found}: the training sentences are part of the cause."
    found = f"S misses the bar and is not more than 2 points above W with both poolers ({gaps})"
    return f"(b) {found}: the training sentences are not the cause."


ARM_READINGS = {  # (dropout 0.1 passes, dropout 0 passes) → the pre-registered reading
    (
        True,
        False,
    ): "the dropout-0.1 arm passes and the dropout-0 arm does not: dropout robustness was the cause",
    (True, True): "both arms pass: more MLM (with dropout or without) was the cause",
    (False, False): "neither arm passes: dropout adaptation at this dose is not the cause",
    (False, True): "the dropout-0 arm passes and the dropout-0.1 arm does not: a case the pre-registration "
    "did not foresee, reported as found",
}


def reading_dropout(passed: dict[str, bool | None]) -> str:
    """(a), read as pre-registered: which arm passes (lwap's trainer, `cls` and `mean` ≥ its bar)."""
    verdicts = (passed.get("dropout0.1"), passed.get("dropout0"))
    if None in verdicts:
        return "(a) Dropout adaptation: not read yet (runs missing)."
    reading = ARM_READINGS[verdicts]  # type: ignore[index]
    return f"(a) {reading[0].upper()}{reading[1:]}."


def next_step(passed: dict[str, bool | None]) -> str:
    """What the pre-registration does next with the arms' verdicts."""
    if None in passed.values() or len(passed) < len(ARMS):
        return "What follows is decided once both arms are read."
    shipped = [arm for arm, ok in passed.items() if ok]
    if shipped:
        return (
            f"As pre-registered: the {' and the '.join(shipped)} arm ship{'s' * (len(shipped) == 1)} as a "
            "backbone with its SOURCE.md, and the unsupervised grid runs on it (every row, the variants "
            "included, seeds 0, 1, 2)."
        )
    return (
        "As pre-registered: no arm passed, so no backbone ships and no unsupervised grid runs. What "
        "remains untested: more pretraining (issue 50's dose–response, 0.25 to 1 B tokens, needs a GPU; "
        "none was lent), and unsupervised SimCSE on more unseen sentences than the mirror's SNLI holds "
        "(one epoch of S's 25,514 took `mean` past the bar, not `cls`)."
    )


def write_report() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "EXPERIMENTS.md").write_text(report(), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run").add_argument("--dry-run", action="store_true", help="list what is left")
    sub.add_parser("report")
    a = parser.parse_args(argv)
    if a.command == "run":
        return run(a.dry_run)
    write_report()
    print((RESULTS / "EXPERIMENTS.md").read_text(encoding="utf-8"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
