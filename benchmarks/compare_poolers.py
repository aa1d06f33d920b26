"""Pooler comparison: every pooler trained with one budget, data order and set of hyperparameters.

    python benchmarks/compare_poolers.py run --regime unsup [--seeds 0 1 2] [--poolers lwap cls ...]
    python benchmarks/compare_poolers.py run --regime sup
    python benchmarks/compare_poolers.py run --regime unsup --backbone ../shared/models/NAME [--set KEY=VALUE]
    python benchmarks/compare_poolers.py report            # writes docs/RESULTS.md from the cell files

A *cell* is one (regime, pooler, seed): `lwap train configs/compare/<regime>-minilm.yaml` with only
model.pooling, training.seed and output.dir changed, then `lwap eval` of the saved model on the 7 STS tasks
and SciFact. Each finished cell is written to benchmarks/results/compare/<regime>/<pooler>-seed<S>.json
(config, seed, commit, wall times, every score) and skipped on the next run, so an interrupted grid resumes
where it stopped (a half-trained cell resumes from its last checkpoint). Several `run` processes may share
one grid (say one per core, each with OMP_NUM_THREADS=1): each claims a cell with a lock file beside its
work folder and skips cells that another live process holds. The untouched backbone (its own mean
pooling, no training) is evaluated once as a reference row. Models and checkpoints go to the work
folder (default outputs/compare, not tracked); the cell files are small and tracked.

The packaged all-MiniLM-L6-v2 is the default backbone. `--backbone` runs the same grid on another one (an
MLM-only encoder under ../shared/models/, say); its cells go to benchmarks/results/compare/backbones/<name>/
and the report gives it its own sections. `--set` changes the budget for such a backbone (a bert-base is
~8× MiniLM's compute per token); the overrides are recorded per cell, and the script refuses to add a cell
whose settings differ from the cells already in that grid.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "compare"
REGIMES = {
    "unsup": REPO / "configs/compare/unsup-minilm.yaml",
    "sup": REPO / "configs/compare/sup-minilm.yaml",
}
POOLERS = ("lwap", "weighted", "cls", "mean", "first_last_avg", "last2_avg")
# LWAP for already-trained encoders (issue 12): the `lwap` pooler with these settings on top of the grid's
# budget. The values were fixed before any variant ran, not tuned: head lr ×10 (a new head's usual lr is
# an order of magnitude above fine-tuning's); warm-up = the first quarter of the steps (one evaluation
# interval of the supervised budget). `{warmup}` is filled in per regime.
WARMUP_STEPS = {"unsup": 50, "sup": 33}
VARIANTS: dict[str, tuple[str, ...]] = {
    "lwap-native": ("model.lwap_start=native",),
    "lwap-headlr": ("training.head_learning_rate_multiplier=10",),
    "lwap-warmup": ("training.head_warmup_steps={warmup}",),
    "lwap-all": (
        "model.lwap_start=native",
        "training.head_learning_rate_multiplier=10",
        "training.head_warmup_steps={warmup}",
    ),
}
ROWS = POOLERS + tuple(VARIANTS)


def pooling_of(row: str) -> str:
    return "lwap" if row in VARIANTS else row


def variant_overrides(row: str, regime: str) -> list[str]:
    return [o.format(warmup=WARMUP_STEPS[regime]) for o in VARIANTS.get(row, ())]


STS_COLUMNS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
STS_LABELS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")
BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"  # the default; cells of others go under backbones/
EVAL_PRECISION = "bf16"  # changes no score by more than 0.06 (README, evaluation baselines), halves the time
EVAL_MAX_SEQ_LENGTH = 256  # the backbone's own inference length, for every row (training truncates to 32)


def commit() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True
    )
    return head + ("-dirty" if dirty.stdout.strip() else "")


def backbone_name(backbone: str) -> str:
    return Path(backbone.rstrip("/")).name


def results_dir(backbone: str) -> Path:
    """Where a backbone's cells live: the default backbone's at the top, any other under backbones/<name>/."""
    return RESULTS if backbone == BACKBONE else RESULTS / "backbones" / backbone_name(backbone)


def run_logged(command: list[str], log: Path) -> None:
    """Run a lwap command, its output appended to `log`; stop the grid if it fails."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        result = subprocess.run(command, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        sys.exit(f"command failed (exit {result.returncode}); see {log}: {' '.join(command)}")


def evaluate(model: str, out: Path, log: Path, tasks: str = "all") -> dict[str, Any]:
    command = [sys.executable, "-m", "lwap", "eval", model, "--tasks", tasks, "--output", str(out)]
    options = ["--precision", EVAL_PRECISION, "--max-seq-length", str(EVAL_MAX_SEQ_LENGTH), "--no-progress"]
    run_logged([*command, *options], log)
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def scores(results: dict[str, Any]) -> dict[str, float]:
    """The figures of one evaluation: each STS task (all and wmean), averages, SciFact."""
    row: dict[str, float] = {}
    for task in STS_COLUMNS:
        entry = results["sts"][task]
        row[task] = entry["score"]
        row[f"{task}_wmean"] = entry.get("wmean", entry["score"])
    row["avg_all"] = statistics.fmean(row[t] for t in STS_COLUMNS)
    row["avg_wmean"] = statistics.fmean(row[f"{t}_wmean"] for t in STS_COLUMNS)
    search = results["search"]["scifact"]
    row.update({"scifact_ndcg@10": search["ndcg@10"], "scifact_mrr@10": search["mrr@10"]})
    row["scifact_recall@100"] = search["recall@100"]
    return row


def layer_attention(results: dict[str, Any]) -> dict[str, Any]:
    """An LWAP model's mean attention per layer on STS-B test (what `lwap eval` measured), for figures."""
    profile = results.get("layer_attention")
    if not profile or not profile.get("sentences"):
        return {}
    keep = ("layers", "sentences", "mean_attention")
    return {"layer_attention": {key: profile[key] for key in keep}}


def fixed_overrides(backbone: str, extra: list[str]) -> list[str]:
    """The settings every cell of one grid shares beyond the config file (the backbone, any --set)."""
    return ([] if backbone == BACKBONE else [f"model.backbone={backbone}"]) + list(extra)


def check_same_budget(folder: Path, shared: list[str]) -> None:
    """Refuse to mix budgets in one grid: every cell must differ only in pooler and seed."""
    for path in sorted(folder.glob("*.json")):
        cell = json.loads(path.read_text(encoding="utf-8"))
        if cell.get("overrides", [])[2:] != shared:
            sys.exit(
                f"{path} was made with overrides {cell.get('overrides', [])[2:]}, this run uses {shared}: "
                "one grid must share one budget (use another --backbone or remove the old cells)"
            )


def restart_flags(out: Path) -> list[str]:
    """How a cell's training starts: a stopped cell resumes from its last complete checkpoint; one stopped
    before any checkpoint was complete (its folder holds only logs) starts over."""
    from lwap.train.outputs import latest_complete_checkpoint

    if latest_complete_checkpoint(out):
        return ["--resume"]
    return ["--overwrite"] if out.exists() else []


def lock_owner_alive(lock: Path) -> bool:
    """Whether the process named in a cell's lock file still runs (an empty lock, whose owner has not yet
    written its pid, counts as held)."""
    try:
        os.kill(int(lock.read_text(encoding="utf-8")), 0)
    except (ValueError, PermissionError):  # empty lock; or a live process of another user
        return True
    except OSError:  # no such process, or the lock is gone
        return False
    return True


@contextlib.contextmanager
def claim(lock: Path) -> Iterator[bool]:
    """True while this process holds `lock`: several `run` processes (one per core, say) can share one
    grid, each cell trained by one of them. The lock holds its owner's pid; a lock left by a process
    that is gone (killed) is taken over, so a stopped grid still resumes."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        if lock_owner_alive(lock):
            yield False
            return
        lock.unlink(missing_ok=True)
        with claim(lock) as mine:  # one retry: another process may take it over first
            yield mine
        return
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))
    try:
        yield True
    finally:
        lock.unlink(missing_ok=True)


def run_cell(regime: str, pooler: str, seed: int, work: Path, backbone: str, extra: list[str]) -> bool:
    """Train and evaluate one cell unless its file exists or another grid process has it; True when it ran."""
    cell_file = results_dir(backbone) / regime / f"{pooler}-seed{seed}.json"
    if cell_file.exists():
        print(f"[done] {regime} {pooler} seed {seed}", flush=True)
        return False
    with claim(work / regime / f"{pooler}-seed{seed}.lock") as mine:
        if not mine:
            print(f"[busy] {regime} {pooler} seed {seed}: another grid process runs it", flush=True)
            return False
        if cell_file.exists():  # finished by another process between the check and the claim
            return False
        train_and_evaluate(regime, pooler, seed, work, backbone, extra, cell_file)
    return True


def train_and_evaluate(
    regime: str, pooler: str, seed: int, work: Path, backbone: str, extra: list[str], cell_file: Path
) -> None:
    """One cell: `lwap train` (resuming a stopped run), `lwap eval`, then `cell_file`."""
    folder = cell_file.parent
    shared = fixed_overrides(backbone, extra)
    check_same_budget(folder, shared)
    folder.mkdir(parents=True, exist_ok=True)
    out = work / regime / f"{pooler}-seed{seed}"
    log = work / regime / f"{pooler}-seed{seed}.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    overrides = [f"model.pooling={pooling_of(pooler)}", f"training.seed={seed}", *shared, f"output.dir={out}"]
    variant = variant_overrides(pooler, regime)
    print(f"[run ] {regime} {pooler} seed {seed} -> {out}", flush=True)
    started = time.perf_counter()
    if not (out / "model" / "modules.json").is_file():
        command = [sys.executable, "-m", "lwap", "train", str(REGIMES[regime].relative_to(REPO))]
        run_logged(
            [*command, *(a for o in [*variant, *overrides] for a in ("--set", o)), *restart_flags(out)], log
        )
    train_seconds = time.perf_counter() - started
    summary = json.loads((out / "train_summary.json").read_text(encoding="utf-8"))
    tick = time.perf_counter()
    results = evaluate(str(out / "model"), out / "eval", log)
    cell = {
        "regime": regime,
        "pooler": pooler,
        "seed": seed,
        "backbone": backbone,
        "config": str(REGIMES[regime].relative_to(REPO)),
        "overrides": overrides[:-1],
        **({"variant": variant} if variant else {}),
        "commit": commit(),
        "train_wall_seconds": round(train_seconds, 1),
        "eval_wall_seconds": round(time.perf_counter() - tick, 1),
        "train": {
            k: summary.get(k) for k in ("steps", "dev_spearman_before", "best_dev_spearman", "best_step")
        },
        "eval_precision": EVAL_PRECISION,
        "eval_max_seq_length": EVAL_MAX_SEQ_LENGTH,
        "scores": scores(results),
        **layer_attention(results),
    }
    cell_file.write_text(json.dumps(cell, indent=2) + "\n", encoding="utf-8")
    print(f"[ok  ] {regime} {pooler} seed {seed}: avg {cell['scores']['avg_all']:.2f}", flush=True)


UNTOUCHED_POOLINGS = ("mean", "cls", "first_last_avg")  # SimCSE's "BERT (first-last avg.)", "BERT [CLS]" rows


def untouched_model(backbone: str, work: Path, pooling: str = "mean") -> str:
    """The backbone as a sentence encoder with no training: itself if it is a sentence-transformers
    folder (and `pooling` is mean), else (a plain Hugging Face encoder, e.g. MLM-only) the backbone with
    `pooling` (`cls` is the plain last [CLS] at inference), saved."""
    from lwap import build_model
    from lwap.backbones import resolve_backbone

    local = Path(backbone) if Path(backbone).exists() else Path(resolve_backbone(backbone))
    if (local / "modules.json").is_file() and pooling == "mean":
        return backbone
    folder = work / untouched_name(pooling) / "model"
    if not (folder / "modules.json").is_file():
        build_model(backbone, pooling=pooling).save(str(folder))
    return str(folder)


def untouched_name(pooling: str) -> str:
    """The work folder of an untouched row (mean keeps the name it had before the other rows existed)."""
    return "untouched" if pooling == "mean" else f"untouched-{pooling}"


def reference_file(backbone: str, pooling: str = "mean") -> Path:
    name = "untouched-backbone.json" if pooling == "mean" else f"untouched-{pooling}.json"
    return results_dir(backbone) / name


def run_reference(work: Path, backbone: str) -> None:
    """Untouched rows: the backbone's mean pooling always; for a plain encoder (no sentence-transformers
    pooling of its own) also its last [CLS] and first-last average, as SimCSE reports for BERT."""
    local = Path(backbone) if Path(backbone).exists() else None
    plain = local is not None and not (local / "modules.json").is_file()
    for pooling in UNTOUCHED_POOLINGS if plain else ("mean",):
        cell_file = reference_file(backbone, pooling)
        if cell_file.exists():
            continue
        cell_file.parent.mkdir(parents=True, exist_ok=True)
        tick = time.perf_counter()
        name = untouched_name(pooling)
        model = untouched_model(backbone, work, pooling)
        results = evaluate(model, work / name / "eval", work / f"{name}.log")
        cell = {
            "model": f"{backbone} ({pooling} pooling, no training)",
            "backbone": backbone,
            "pooling": pooling,
            "commit": commit(),
            "eval_wall_seconds": round(time.perf_counter() - tick, 1),
            "eval_precision": EVAL_PRECISION,
            "eval_max_seq_length": EVAL_MAX_SEQ_LENGTH,
            "scores": scores(results),
        }
        cell_file.write_text(json.dumps(cell, indent=2) + "\n", encoding="utf-8")
        print(f"[ok  ] untouched {pooling}: avg {cell['scores']['avg_all']:.2f}", flush=True)


def command_run(args: argparse.Namespace) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(args.work_dir).resolve()
    if args.backbone != BACKBONE:
        work = work / "backbones" / backbone_name(args.backbone)
    run_reference(work, args.backbone)
    cells = [(seed, pooler) for seed in args.seeds for pooler in args.poolers]
    minutes: list[float] = []
    for done, (seed, pooler) in enumerate(cells, start=1):  # seed-major: a stopped grid is level
        tick = time.perf_counter()
        if run_cell(args.regime, pooler, seed, work, args.backbone, args.set):
            minutes.append((time.perf_counter() - tick) / 60)
            left = len(cells) - done
            estimate = left * statistics.median(minutes)
            print(f"       {minutes[-1]:.1f} min; {left} cells left, about {estimate:.0f} min", flush=True)


# ---------------------------------------------------------------- report


PLANNED_SEEDS = (0, 1, 2)


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def load_cells(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """One grid's cells (a backbone's regime folder), by pooler in POOLERS order, seeds ascending."""
    cells: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("*.json")):
        cell = json.loads(path.read_text(encoding="utf-8"))
        cells.setdefault(cell["pooler"], []).append(cell)
    return {p: sorted(cells[p], key=lambda c: c["seed"]) for p in ROWS if p in cells}


COLUMNS = [
    *zip(STS_COLUMNS, STS_LABELS, strict=True),
    ("avg_all", "Avg. (all)"),
    ("avg_wmean", "Avg. (wmean)"),
    ("scifact_ndcg@10", "SciFact nDCG@10"),
]


def grid_status(regime: str, cells: dict[str, list[dict[str, Any]]], backbone: str) -> str:
    """How much of the planned grid (every pooler × seeds 0, 1, 2) is done, and its cost per cell."""
    done = sum(len(runs) for pooler, runs in cells.items() if pooler in POOLERS)
    planned = len(POOLERS) * len(PLANNED_SEEDS)
    minutes = [
        (c["train_wall_seconds"] + c["eval_wall_seconds"]) / 60
        for pooler, runs in cells.items()
        if pooler in POOLERS
        for c in runs
    ]
    status = f"Grid: {done} of {planned} planned cells ({len(POOLERS)} poolers × seeds "
    status += ", ".join(map(str, PLANNED_SEEDS)) + ")"
    if minutes:
        status += f"; median {statistics.median(minutes):.1f} min per cell (train + eval, as run)"
    if done < planned:
        option = "" if backbone == BACKBONE else f" --backbone {backbone}"
        status += (
            f". The missing cells are runs the grid has not reached yet, not runs left out: "
            f"`python benchmarks/compare_poolers.py run --regime {regime}{option}` continues it"
        )
    return status + "."


def regime_section(
    backbone: str, regime: str, reference: dict[str, Any] | None, others: Sequence[dict[str, Any]] = ()
) -> list[str]:
    cells = load_cells(results_dir(backbone) / regime)
    if not cells and not reference:
        return [f"_No cells of the `{regime}` regime yet._", ""]
    lines = [grid_status(regime, cells, backbone), ""]
    budget = next(iter(cells.values()))[0].get("overrides", [])[2:] if cells else []
    if budget:
        listed = ", ".join(f"`{o}`" for o in budget)
        lines += [f"Settings beyond `{REGIMES[regime].relative_to(REPO)}`: {listed}", ""]
    header = "| pooler | seeds | " + " | ".join(label for _, label in COLUMNS) + " | dev before → best |"
    lines += [header, "|" + " --- |" * (len(COLUMNS) + 3)]
    if reference:
        ref = reference["scores"]
        values = " | ".join(f"{ref[key]:.2f}" for key, _ in COLUMNS)
        lines.append(f"| untouched backbone (mean, no training) | – | {values} | – |")
    for other in others:
        values = " | ".join(f"{other['scores'][key]:.2f}" for key, _ in COLUMNS)
        lines.append(f"| untouched backbone ({other['pooling']}, no training) | – | {values} | – |")
    for pooler, runs in cells.items():
        parts = []
        for key, _ in COLUMNS:
            mean, std = mean_std([c["scores"][key] for c in runs])
            parts.append(f"{mean:.2f} ± {std:.2f}" if len(runs) > 1 else f"{mean:.2f}")
        before = statistics.fmean(c["train"]["dev_spearman_before"] * 100 for c in runs)
        best = statistics.fmean(c["train"]["best_dev_spearman"] * 100 for c in runs)
        lines.append(f"| `{pooler}` | {len(runs)} | " + " | ".join(parts) + f" | {before:.1f} → {best:.1f} |")
    if not cells:
        return [
            *lines,
            "",
            "_No trained cells of this regime yet: the rows above are the untouched backbone._",
            "",
        ]
    lines += ["", *standing(cells), *variant_legend(cells, regime)]
    lines += [*against_untouched(cells, reference), *budget_check(cells, reference, others)]
    lines += [*below_step_zero(cells), *verdicts(cells)]
    lines += [*variant_verdicts(cells), ""]
    return lines


def standing(cells: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The regime in short: where the paper's `lwap` ranks among the poolers (by mean over seeds) on
    Avg. (all), Avg. (wmean) and SciFact, and its gap to `cls`, the paper's baseline, under both
    aggregations, judged against the seed spread."""
    poolers = [p for p in cells if p in POOLERS]
    if "lwap" not in poolers or len(poolers) < 2:
        return []
    out = []
    keys = (("avg_all", "Avg. (all)"), ("avg_wmean", "Avg. (wmean)"), ("scifact_ndcg@10", "SciFact nDCG@10"))
    for key, label in keys:
        means = {p: statistics.fmean(c["scores"][key] for c in cells[p]) for p in poolers}
        order = sorted(poolers, key=lambda p: -means[p])
        ranked = " > ".join(f"`{p}` {means[p]:.2f}" for p in order)
        out.append(f"- {label}: `lwap` ranks {order.index('lwap') + 1} of {len(order)} ({ranked}).")
    if "cls" in cells:
        for key, label in keys[:2]:  # SimCSE's aggregation and the LWAP paper's
            base, other = ([c["scores"][key] for c in cells[p]] for p in ("lwap", "cls"))
            gap = difference("lwap", "cls", base, other)
            out.append(f"- Against `cls` (the paper's baseline), {label}: {gap}.")
    seeds = sorted({len(cells[p]) for p in poolers})
    caveat = "" if seeds == [len(PLANNED_SEEDS)] else " (not every pooler has all its seeds yet: provisional)"
    return [f"In short{caveat}:", "", *out, ""]


def budget_check(
    cells: dict[str, list[dict[str, Any]]], reference: dict[str, Any] | None, others: Sequence[dict[str, Any]]
) -> list[str]:
    """Like for like against the untouched rows of a plain (e.g. MLM-only) backbone: trained `cls`, `mean`
    and `first_last_avg` against the same pooling with no training. Issue 11 asks for a budget under which
    plain SimCSE clearly gains, as it does on MLM backbones; this is where that is read off."""
    untouched = {o["pooling"]: o for o in others}
    if not untouched:
        return []
    if reference:
        untouched["mean"] = reference
    out = []
    for pooling in UNTOUCHED_POOLINGS:
        if pooling not in cells or pooling not in untouched:
            continue
        values = [c["scores"]["avg_all"] for c in cells[pooling]]
        before = untouched[pooling]["scores"]["avg_all"]
        mean, std = mean_std(values)
        if len(values) < 2:
            verdict = "one seed: spread unknown"
        else:
            larger = mean - before > std
            verdict = f"{'**larger than**' if larger else 'not larger than'} its seed spread, {std:.2f}"
        out.append(
            f"- `{pooling}`: {before:.2f} untouched → {mean:.2f} trained ({mean - before:+.2f}; {verdict})."
        )
    if not out:
        return []
    return [
        "Budget check, Avg. (all): each pooling trained against the same pooling untouched:",
        "",
        *out,
        "",
    ]


def variant_legend(cells: dict[str, list[dict[str, Any]]], regime: str) -> list[str]:
    """What each LWAP variant row adds to the grid's budget (issue 12: LWAP on already-trained encoders)."""
    rows = [row for row in cells if row in VARIANTS]
    if not rows:
        return []
    seeds = ", ".join(f"`{row}` {len(cells[row])}/{len(PLANNED_SEEDS)}" for row in rows)
    lines = [f"LWAP variants for already-trained encoders (seeds run: {seeds}), `lwap` plus:", ""]
    lines += [f"- `{row}`: " + ", ".join(f"`{o}`" for o in variant_overrides(row, regime)) for row in rows]
    return [*lines, ""]


def variant_verdicts(cells: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each LWAP variant against `mean` trained with the same budget (issue 12's target)."""
    rows = [row for row in cells if row in VARIANTS]
    if not rows or "mean" not in cells:
        return []
    out = ["", "LWAP variants against `mean` (same budget and data order):", ""]
    for key, label in (("avg_all", "Avg. (all)"), ("scifact_ndcg@10", "SciFact nDCG@10")):
        other = [c["scores"][key] for c in cells["mean"]]
        for row in rows:
            base = [c["scores"][key] for c in cells[row]]
            out.append(f"- {label}: " + difference(row, "mean", base, other))
    return [*out, "", variant_target(cells, rows)]


def variant_target(cells: dict[str, list[dict[str, Any]]], rows: list[str]) -> str:
    """Issue 12's target, read off the cells: the best LWAP variant (by its mean STS-B dev score, the
    selection a user can make without test data) beats `mean` on Avg. (all) by more than the seed spread,
    with SciFact nDCG@10 not lower."""

    def avg(row: str, key: str) -> tuple[float, float]:
        return mean_std([c["scores"][key] for c in cells[row]])

    partial = [row for row in rows if len(cells[row]) < len(PLANNED_SEEDS)]
    candidates = [row for row in rows if row not in partial] or rows
    best = max(candidates, key=lambda r: statistics.fmean(c["train"]["best_dev_spearman"] for c in cells[r]))
    pending = ", ".join(f"`{row}` ({len(cells[row])} of {len(PLANNED_SEEDS)} seeds)" for row in partial)
    caveat = (
        f" Not counted until their seeds are complete: {pending}." if partial and best not in partial else ""
    )
    (m1, s1), (m2, s2) = avg(best, "avg_all"), avg("mean", "avg_all")
    scifact = avg(best, "scifact_ndcg@10")[0] - avg("mean", "scifact_ndcg@10")[0]
    head = (
        f"Best variant by STS-B dev: `{best}`; Avg. (all) {m1 - m2:+.2f} against `mean`, "
        f"SciFact {scifact:+.2f}. "
    )
    if len(cells[best]) < len(PLANNED_SEEDS):
        return (
            head + f"Target not decided yet: `{best}` has {len(cells[best])} of {len(PLANNED_SEEDS)} seeds."
        )
    met = m1 - m2 > s1 + s2 and scifact >= 0
    if met:
        return head + "**Target met.**" + caveat
    spread = f"(needed: more than the summed seed spreads, {s1 + s2:.2f}, with SciFact not lower)"
    return (
        head
        + f"**Target not met**: no variant beats `mean` as asked {spread}. "
        + attention_note(cells[best])
        + caveat
    )


def attention_note(runs: list[dict[str, Any]]) -> str:
    """Why a variant could not move far from its start, read off its cells: how far its layer attention
    is from uniform (a head that learned nothing layer-specific) and what training added on STS-B dev."""
    profiles = [c["layer_attention"]["mean_attention"] for c in runs if c.get("layer_attention")]
    dev = statistics.fmean(
        (c["train"]["best_dev_spearman"] - c["train"]["dev_spearman_before"]) * 100 for c in runs
    )
    note = f"Training added {dev:+.2f} STS-B dev points to the start on average"
    if not profiles:
        return note + "."
    profile = [statistics.fmean(v) for v in zip(*profiles, strict=True)]
    seeds = f"{len(profiles)} seed{'s' * (len(profiles) > 1)}"
    note += (
        f"; the mean attention per layer (STS-B test, {seeds}) runs from {min(profile):.3f} to "
        f"{max(profile):.3f} against a uniform {1 / len(profile):.3f}"
    )
    if max(profile) < 1.5 * min(profile):
        return note + (
            ": the head learned almost no preference among layers, so its correction is close to one "
            "average of all layers."
        )
    return note + f", most on layer {profile.index(max(profile))} (0 = embedding output)."


def difference(a: str, b: str, base: list[float], other: list[float]) -> str:
    """`a` − `b` with its verdict against the seed spread (and Welch's p) when both have ≥ 2 seeds."""
    from scipy.stats import ttest_ind

    (m1, s1), (m2, s2) = mean_std(base), mean_std(other)
    delta = m1 - m2
    if min(len(base), len(other)) < 2:  # one seed has no spread to compare with
        return f"`{a}` − `{b}` = {delta:+.2f} (one seed: spread unknown)"
    larger = abs(delta) > s1 + s2
    p = ttest_ind(base, other, equal_var=False).pvalue
    verdict = "**larger than the seed spread**" if larger else "within the seed spread"
    return f"`{a}` − `{b}` = {delta:+.2f} ({verdict}; p = {p:.3f})"


def below_step_zero(cells: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Runs whose kept checkpoint scores below the untrained model on STS-B dev: say so, don't hide it.

    SimCSE's model selection (and ours) keeps the best *trained* checkpoint; the step-0 model is
    evaluated as a reference but never kept, so a run that training only hurt keeps its least bad step.
    """
    worse = [
        f"`{c['pooler']}` seed {c['seed']} ({c['train']['dev_spearman_before'] * 100:.2f} → "
        f"{c['train']['best_dev_spearman'] * 100:.2f})"
        for runs in cells.values()
        for c in runs
        if c["train"]["best_dev_spearman"] < c["train"]["dev_spearman_before"]
    ]
    if not worse:
        return []
    return [
        "Runs where every trained checkpoint scored below the untrained model on STS-B dev (step 0 is",
        "evaluated but, as in SimCSE, never kept, so these keep their least bad trained step): "
        + ", ".join(worse)
        + ".",
        "",
    ]


def against_untouched(cells: dict[str, list[dict[str, Any]]], reference: dict[str, Any] | None) -> list[str]:
    """What training did to the already sentence-trained backbone: each pooler's mean against it."""
    if not reference:
        return []
    out = []
    for key, label in (("avg_all", "Avg. (all)"), ("scifact_ndcg@10", "SciFact nDCG@10")):
        base = reference["scores"][key]
        gaps = {p: statistics.fmean(c["scores"][key] for c in runs) - base for p, runs in cells.items()}
        listed = ", ".join(f"`{p}` {gap:+.2f}" for p, gap in sorted(gaps.items(), key=lambda kv: -kv[1]))
        out.append(f"- {label} against the untouched backbone ({base:.2f}): {listed}.")
    return [
        "What training did, pooler mean minus the untouched backbone (no training, its own mean pooling):",
        "",
        *out,
        "",
    ]


def verdicts(cells: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Which differences exceed the seed-to-seed spread: |Δ mean| > std(a) + std(b), plus Welch's p."""
    out = ["Differences against `lwap` (Avg. all, SciFact nDCG@10). *Larger than the seed spread* means the"]
    out.append(
        "gap between the means exceeds the sum of the two standard deviations; Welch's t-test p beside it:"
    )
    if min((len(runs) for pooler, runs in cells.items() if pooler in POOLERS), default=0) < 3:
        out.append("(Fewer than three seeds per pooler so far: the spreads are rough estimates and")
        out.append("these verdicts provisional.)")
    out.append("")
    if "lwap" not in cells:
        return ["_No `lwap` cells: no comparison._"]
    for key, label in (("avg_all", "Avg. (all)"), ("scifact_ndcg@10", "SciFact nDCG@10")):
        base = [c["scores"][key] for c in cells["lwap"]]
        for pooler, runs in cells.items():
            if pooler == "lwap" or pooler in VARIANTS:
                continue
            other = [c["scores"][key] for c in runs]
            out.append(f"- {label}: " + difference("lwap", pooler, base, other))
    return out


def backbones() -> list[str]:
    """The default backbone, then every other backbone with cells under backbones/."""
    found = [BACKBONE]
    for folder in sorted((RESULTS / "backbones").glob("*")):
        for path in sorted(folder.rglob("*.json")):
            found.append(json.loads(path.read_text(encoding="utf-8"))["backbone"])
            break
    return found


def all_runs_table() -> list[str]:
    columns = "backbone | regime | pooler | seed | steps | best dev step | Avg. (all) | Avg. (wmean)"
    lines, notes = [f"| {columns} | SciFact | train s | eval s | commit |"], []
    lines.append("|" + " --- |" * 12)
    for backbone in backbones():
        for regime in REGIMES:
            for pooler, runs in load_cells(results_dir(backbone) / regime).items():
                for c in runs:
                    s = c["scores"]
                    lines.append(
                        f"| {backbone_name(backbone)} | {regime} | `{pooler}` | {c['seed']} | "
                        f"{c['train']['steps']} | {c['train']['best_step']} | "
                        f"{s['avg_all']:.2f} | {s['avg_wmean']:.2f} | {s['scifact_ndcg@10']:.2f} | "
                        f"{c['train_wall_seconds']:.0f} | {c['eval_wall_seconds']:.0f}"
                        f"{' (note)' if c.get('note') else ''} | {c['commit'][:10]} |"
                    )
                    if c.get("note"):
                        notes.append(f"- note on {regime} `{pooler}` seed {c['seed']}: {c['note']}")
    return [*lines, "", *notes] if notes else lines


def backbone_sections(backbone: str) -> list[str]:
    ref_file = results_dir(backbone) / "untouched-backbone.json"
    reference = json.loads(ref_file.read_text(encoding="utf-8")) if ref_file.exists() else None
    others = [
        json.loads(path.read_text(encoding="utf-8"))
        for path in (reference_file(backbone, p) for p in UNTOUCHED_POOLINGS[1:])
        if path.exists()
    ]
    title = "" if backbone == BACKBONE else f"{backbone_name(backbone)}: "
    note = BACKBONE_NOTES.get(backbone_name(backbone))
    return [
        *([f"## {backbone_name(backbone)}: the backbone", "", note, ""] if note else []),
        f"## {title}Unsupervised SimCSE (Wikipedia sentences)",
        "",
        *regime_section(backbone, "unsup", reference, others),
        f"## {title}Supervised SimCSE (SNLI triplets)",
        "",
        *regime_section(backbone, "sup", reference, others),
    ]


def other_backbones_line(names: list[str]) -> str:
    if names:
        return "Other backbones in this report (own sections below, own budgets): " + ", ".join(names) + "."
    return (
        "No other backbone has been run: no MLM-only backbone existed under `../shared/models/` when the\n"
        "grid ran. When one appears, `python benchmarks/compare_poolers.py run --regime unsup --backbone\n"
        "../shared/models/NAME [--set KEY=VALUE ...]` gives it its own sections here."
    )


def command_report(args: argparse.Namespace) -> None:
    others = backbones()[1:]
    sections = [line for backbone in backbones() for line in backbone_sections(backbone)]
    text = [
        "# Pooler comparison",
        "",
        "Generated by `python benchmarks/compare_poolers.py report` from the cell files in",
        "`benchmarks/results/compare/`, made by",
        "`python benchmarks/compare_poolers.py run --regime unsup` and `... run --regime sup`.",
        "Do not edit by hand.",
        "",
        INTRO,
        "",
        other_backbones_line([f"`{b}`" for b in others]),
        "",
        *sections,
        *attention_section(),
        "## Every run",
        "",
        *all_runs_table(),
        "",
    ]
    Path(args.output).write_text("\n".join(text), encoding="utf-8")
    print(f"wrote {args.output}")


def command_attach_profiles(args: argparse.Namespace) -> None:
    """Add the layer-attention profile to cells made before cells kept it, from the same run's
    `lwap eval` output (WORK/<regime>/<cell>/eval/results.json) — nothing is re-run or re-scored."""
    work = Path(args.work_dir).resolve()
    if args.backbone != BACKBONE:
        work = work / "backbones" / backbone_name(args.backbone)
    for regime in REGIMES:
        for path in sorted((results_dir(args.backbone) / regime).glob("*.json")):
            cell = json.loads(path.read_text(encoding="utf-8"))
            results = work / regime / path.stem / "eval" / "results.json"
            if cell.get("layer_attention") or not results.is_file():
                continue
            profile = layer_attention(json.loads(results.read_text(encoding="utf-8")))
            if profile:
                cell.update(profile)
                path.write_text(json.dumps(cell, indent=2) + "\n", encoding="utf-8")
                print(f"attached the layer-attention profile to {path}")


def command_reprofile(args: argparse.Namespace) -> None:
    """Profiles for `lwap` cells made before cells kept one and whose eval output is gone: retrain each
    such cell (its config, overrides and seed, at this commit) and measure the layer attention on STS-B
    test with the grid's evaluation settings. The cell's scores stay its own; the retrained run's STS-B
    dev and test scores are stored beside the profile, so anyone can see how closely the retrain
    reproduced the cell (same data order and seed; kernels may differ slightly between commits)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(args.work_dir).resolve()
    if args.backbone != BACKBONE:
        work = work / "backbones" / backbone_name(args.backbone)
    for regime in args.regimes:
        for seed in args.seeds:
            path = results_dir(args.backbone) / regime / f"lwap-seed{seed}.json"
            if not path.is_file():
                continue
            cell = json.loads(path.read_text(encoding="utf-8"))
            if cell.get("layer_attention"):
                continue
            out = work / regime / f"{path.stem}-reprofile"
            log = out.parent / f"{out.name}.log"
            out.parent.mkdir(parents=True, exist_ok=True)
            print(f"[run ] retraining {regime} lwap seed {seed} for its profile -> {out}", flush=True)
            if not (out / "model" / "modules.json").is_file():
                command = [sys.executable, "-m", "lwap", "train", cell["config"]]
                overrides = [*cell.get("variant", []), *cell["overrides"], f"output.dir={out}"]
                run_logged(
                    [*command, *(a for o in overrides for a in ("--set", o)), *restart_flags(out)], log
                )
            summary = json.loads((out / "train_summary.json").read_text(encoding="utf-8"))
            results = evaluate(str(out / "model"), out / "eval", log, tasks="stsb")
            cell.update(layer_attention(results))
            cell["layer_attention_source"] = {
                "retrained_at_commit": commit(),
                "retrained_best_dev_spearman": summary.get("best_dev_spearman"),
                "cell_best_dev_spearman": cell["train"]["best_dev_spearman"],
                "retrained_stsb": results["sts"]["stsb"]["score"],
                "cell_stsb": cell["scores"]["stsb"],
            }
            path.write_text(json.dumps(cell, indent=2) + "\n", encoding="utf-8")
            source = cell["layer_attention_source"]
            print(
                f"[ok  ] profile attached to {path}; STS-B test {source['retrained_stsb']:.2f} retrained, "
                f"{source['cell_stsb']:.2f} in the cell",
                flush=True,
            )


FIGURE_ROWS = ("lwap", "lwap-native")  # the attention profiles drawn, where a backbone has their cells


class Profile(NamedTuple):
    """One trained LWAP row's layer attention on one backbone and regime, averaged over its seeds."""

    backbone: str
    row: str
    seeds: int
    retrained: bool
    attention: list[float]  # mean attention each hidden state receives (index 0 = embedding output)

    @property
    def label(self) -> str:
        retrained = " retrained" if self.retrained else ""
        seeds = f"{self.seeds} seed{'s' * (self.seeds > 1)}"
        return f"{backbone_name(self.backbone)} · {self.row} ({seeds}{retrained})"


def attention_profiles(regime: str) -> list[Profile]:
    """The profiles the figure draws: every backbone's FIGURE_ROWS that have cells with a profile."""
    found = []
    for backbone in backbones():
        cells = load_cells(results_dir(backbone) / regime)
        for row in FIGURE_ROWS:
            runs = [c for c in cells.get(row, []) if c.get("layer_attention")]
            if runs:
                columns = zip(*(c["layer_attention"]["mean_attention"] for c in runs), strict=True)
                retrained = any(c.get("layer_attention_source") for c in runs)
                found.append(
                    Profile(backbone, row, len(runs), retrained, [statistics.fmean(v) for v in columns])
                )
    return found


def layer_name(index: int) -> str:
    return "the embedding output" if index == 0 else f"layer {index}"


def attention_section() -> list[str]:
    """The figure in the report, and what each profile shows in numbers: where its attention peaks, what
    its last layer gets against uniform, and how the paper's `lwap` differs between the backbones."""
    lines = [
        "## What LWAP attends to",
        "",
        "![mean attention per layer](layer_attention.png)",
        "",
        "`python benchmarks/compare_poolers.py figure` draws it from the cell files: the mean attention",
        "each hidden state receives as a key (over query layers and STS-B test sentences), seeds averaged.",
        "`retrained` marks profiles measured on a retrain of the cell (`compare_poolers.py reprofile`).",
        "",
    ]
    for regime in REGIMES:
        profiles = attention_profiles(regime)
        if not profiles:
            continue
        lines.append(f"{'Unsupervised' if regime == 'unsup' else 'Supervised'}:")
        lines.append("")
        for profile in profiles:
            a = profile.attention
            top, low = a.index(max(a)), a.index(min(a))
            lines.append(
                f"- {profile.label}: most on {layer_name(top)} ({a[top]:.3f}), least on {layer_name(low)} "
                f"({a[low]:.3f}); last layer {a[-1]:.3f} against a uniform {1 / len(a):.3f}."
            )
        paper = [p for p in profiles if p.row == "lwap"]
        if len(paper) > 1 and len({len(p.attention) for p in paper}) == 1:
            first, other = paper[0], paper[1]
            shift = [b - a for a, b in zip(first.attention, other.attention, strict=True)]
            up, down = shift.index(max(shift)), shift.index(min(shift))
            lines.append(
                f"- `lwap` on {backbone_name(other.backbone)} against {backbone_name(first.backbone)}: "
                f"{layer_name(up)} gains the most ({shift[up]:+.3f}), {layer_name(down)} loses the most "
                f"({shift[down]:+.3f})."
            )
        lines.append("")
    return lines


def command_figure(args: argparse.Namespace) -> None:
    """docs/layer_attention.png: mean attention each layer receives (STS-B test), per backbone and regime,
    averaged over the seeds of each trained LWAP row; one panel per regime."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, panels = plt.subplots(1, len(REGIMES), figsize=(12, 4.2), sharey=True)
    colours = [(backbone, row) for backbone in backbones() for row in FIGURE_ROWS]
    for panel, regime in zip(panels, REGIMES, strict=True):
        series = attention_profiles(regime)
        width = 0.8 / max(len(series), 1)
        for i, profile in enumerate(series):
            x = [j + (i - (len(series) - 1) / 2) * width for j in range(len(profile.attention))]
            colour = f"C{colours.index((profile.backbone, profile.row))}"  # the same in both panels
            panel.bar(x, profile.attention, width=width, label=profile.label, color=colour)
        if series:
            layers = len(series[0].attention)
            panel.axhline(1 / layers, color="gray", linestyle="--", linewidth=1, label="uniform")
            panel.set_xticks(range(layers), ["emb", *map(str, range(1, layers))])
            panel.set_ylim(0, 1.45 * max(max(p.attention) for p in series))  # room for the legend
        panel.set_title(f"{'unsupervised' if regime == 'unsup' else 'supervised'} SimCSE", fontsize=10)
        panel.set_xlabel("layer attended (key; emb = embedding output)")
        panel.legend(fontsize=7, loc="upper left", ncol=2)
    panels[0].set_ylabel("mean attention weight (STS-B test)")
    figure.suptitle(
        "What LWAP attends to, per backbone (python benchmarks/compare_poolers.py figure)", fontsize=10
    )
    figure.tight_layout()
    figure.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


BACKBONE_NOTES = {
    "minilm-l6-mlm": """\
`../shared/models/minilm-l6-mlm/` is all-MiniLM-L6-v2 continued with masked-language-model training on
the Wikipedia mirror (its SOURCE.md says how): a last layer last trained for token prediction, as in the
LWAP paper's regime. **It is a proxy, not bert-base**: 6 layers, H = 384, short MLM training
(perplexity 79), its lower layers and its [CLS] still carry part of all-MiniLM-L6-v2's contrastive
training (untouched [CLS] scores far above bert-base's), so absolute numbers are not comparable with the
paper's or SimCSE's bert-base tables; the rankings are what this answers. Same budgets as the MiniLM grid
(the config files named in each section); its untouched rows are the backbone with mean pooling, with
its plain last [CLS] and with the first-last average (SimCSE's "BERT [CLS]" and "BERT (first-last avg.)").""",
}

INTRO = """\
Backbone: the packaged all-MiniLM-L6-v2 (6 layers, H = 384) — the only pretrained encoder available
offline here. It was already trained contrastively with mean pooling on a billion pairs, so this measures
what a short SimCSE run does to an already strong sentence encoder with each pooler (new heads — `lwap`'s
attention, `cls`'s MLP — start random), not what the LWAP paper measured (bert-base from MLM
pre-training).

Budget (identical for every pooler and seed; only `model.pooling` and `training.seed` differ, so a seed
gives every pooler the same data order):
- unsupervised: `configs/compare/unsup-minilm.yaml`, 200 steps × 64 Wikipedia sentences, lr 3e-5, bf16;
- supervised: `configs/compare/sup-minilm.yaml`, 1 epoch = 99 steps × 64 SNLI triplets, lr 2e-5, bf16;
- both: τ = 0.05, max length 32, STS-B dev every 50 / 33 steps, the best checkpoint kept (SimCSE's
  model selection), then `lwap eval --tasks all --precision bf16 --max-seq-length 256` (senteval data;
  cosine Spearman × 100; 256 tokens = the backbone's own inference length, for every row).

Time on 2 quiet cores: an unsupervised cell about 5.3 minutes (training ~3 min, evaluation ~2.4 min, most
of it the SciFact corpus at 256 tokens), a supervised one about 4.1, so a regime's 18 cells take about 95
and 75 minutes (each section's grid line gives the measured median).

Cells show mean ± standard deviation over seeds (a plain number where a pooler has one seed so far).
STS12–16 columns use `all` aggregation (SimCSE); Avg. (wmean) averages the seven tasks with STS12–16
under `wmean` (the LWAP paper's). "dev before → best" is STS-B dev Spearman × 100 at step 0 and of the
kept checkpoint."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="train and evaluate the missing cells of one regime")
    run.add_argument("--regime", choices=tuple(REGIMES), required=True)
    run.add_argument("--seeds", type=int, nargs="+", default=list(PLANNED_SEEDS))
    run.add_argument(
        "--poolers", nargs="+", choices=ROWS, default=list(POOLERS), help="poolers and LWAP variants"
    )
    run.add_argument("--work-dir", default=str(REPO / "outputs" / "compare"))
    run.add_argument("--backbone", default=BACKBONE, help="hub id or folder (default: the packaged MiniLM)")
    run.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="budget override for every cell"
    )
    run.set_defaults(func=command_run)
    report = commands.add_parser("report", help="write docs/RESULTS.md from the cell files")
    report.add_argument("--output", default=str(REPO / "docs" / "RESULTS.md"))
    report.set_defaults(func=command_report)
    attach = commands.add_parser(
        "attach-profiles", help="add LWAP profiles to older cells from their eval output"
    )
    attach.add_argument("--work-dir", default=str(REPO / "outputs" / "compare"))
    attach.add_argument("--backbone", default=BACKBONE)
    attach.set_defaults(func=command_attach_profiles)
    reprofile = commands.add_parser(
        "reprofile",
        help="retrain `lwap` cells without a profile (and without their eval output) to measure it",
    )
    reprofile.add_argument("--regimes", nargs="+", choices=tuple(REGIMES), default=list(REGIMES))
    reprofile.add_argument("--seeds", type=int, nargs="+", default=list(PLANNED_SEEDS))
    reprofile.add_argument("--work-dir", default=str(REPO / "outputs" / "compare"))
    reprofile.add_argument("--backbone", default=BACKBONE)
    reprofile.set_defaults(func=command_reprofile)
    figure = commands.add_parser("figure", help="draw docs/layer_attention.png from the cell files")
    figure.add_argument("--output", default=str(REPO / "docs" / "layer_attention.png"))
    figure.set_defaults(func=command_figure)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
