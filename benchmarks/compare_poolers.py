"""Pooler comparison: every pooler trained with one budget, data order and set of hyperparameters.

    python benchmarks/compare_poolers.py run --regime unsup [--seeds 0 1 2] [--poolers lwap cls ...]
    python benchmarks/compare_poolers.py run --regime sup
    python benchmarks/compare_poolers.py report            # writes docs/RESULTS.md from the cell files

A *cell* is one (regime, pooler, seed): `lwap train configs/compare/<regime>-minilm.yaml` with only
model.pooling, training.seed and output.dir changed, then `lwap eval` of the saved model on the 7 STS tasks
and SciFact. Each finished cell is written to benchmarks/results/compare/<regime>/<pooler>-seed<S>.json
(config, seed, commit, wall times, every score) and skipped on the next run, so an interrupted grid resumes
where it stopped (a half-trained cell resumes from its last checkpoint). The untouched backbone (its own
mean pooling, no training) is evaluated once as a reference row. Models and checkpoints go to the work
folder (default outputs/compare, not tracked); the cell files are small and tracked.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "compare"
REGIMES = {
    "unsup": REPO / "configs/compare/unsup-minilm.yaml",
    "sup": REPO / "configs/compare/sup-minilm.yaml",
}
POOLERS = ("lwap", "weighted", "cls", "mean", "first_last_avg", "last2_avg")
STS_COLUMNS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
STS_LABELS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")
BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"
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


def run_logged(command: list[str], log: Path) -> None:
    """Run a lwap command, its output appended to `log`; stop the grid if it fails."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        result = subprocess.run(command, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        sys.exit(f"command failed (exit {result.returncode}); see {log}: {' '.join(command)}")


def evaluate(model: str, out: Path, log: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "lwap", "eval", model, "--tasks", "all", "--output", str(out)]
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


def run_cell(regime: str, pooler: str, seed: int, work: Path) -> None:
    cell_file = RESULTS / regime / f"{pooler}-seed{seed}.json"
    if cell_file.exists():
        print(f"[done] {regime} {pooler} seed {seed}", flush=True)
        return
    cell_file.parent.mkdir(parents=True, exist_ok=True)
    out = work / regime / f"{pooler}-seed{seed}"
    log = work / regime / f"{pooler}-seed{seed}.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    overrides = [f"model.pooling={pooler}", f"training.seed={seed}", f"output.dir={out}"]
    print(f"[run ] {regime} {pooler} seed {seed} -> {out}", flush=True)
    started = time.perf_counter()
    if not (out / "model" / "modules.json").is_file():
        resume = (
            ["--resume"] if (out / "checkpoints").is_dir() and any((out / "checkpoints").iterdir()) else []
        )
        command = [sys.executable, "-m", "lwap", "train", str(REGIMES[regime].relative_to(REPO))]
        run_logged([*command, *(a for o in overrides for a in ("--set", o)), *resume], log)
    train_seconds = time.perf_counter() - started
    summary = json.loads((out / "train_summary.json").read_text(encoding="utf-8"))
    tick = time.perf_counter()
    results = evaluate(str(out / "model"), out / "eval", log)
    cell = {
        "regime": regime,
        "pooler": pooler,
        "seed": seed,
        "config": str(REGIMES[regime].relative_to(REPO)),
        "overrides": overrides[:2],
        "commit": commit(),
        "train_wall_seconds": round(train_seconds, 1),
        "eval_wall_seconds": round(time.perf_counter() - tick, 1),
        "train": {
            k: summary.get(k) for k in ("steps", "dev_spearman_before", "best_dev_spearman", "best_step")
        },
        "eval_precision": EVAL_PRECISION,
        "eval_max_seq_length": EVAL_MAX_SEQ_LENGTH,
        "scores": scores(results),
    }
    cell_file.write_text(json.dumps(cell, indent=2) + "\n", encoding="utf-8")
    print(f"[ok  ] {regime} {pooler} seed {seed}: avg {cell['scores']['avg_all']:.2f}", flush=True)


def run_reference(work: Path) -> None:
    cell_file = RESULTS / "untouched-backbone.json"
    if cell_file.exists():
        return
    cell_file.parent.mkdir(parents=True, exist_ok=True)
    tick = time.perf_counter()
    results = evaluate(BACKBONE, work / "untouched" / "eval", work / "untouched.log")
    cell = {
        "model": f"{BACKBONE} (its own mean pooling, no training)",
        "commit": commit(),
        "eval_wall_seconds": round(time.perf_counter() - tick, 1),
        "eval_precision": EVAL_PRECISION,
        "eval_max_seq_length": EVAL_MAX_SEQ_LENGTH,
        "scores": scores(results),
    }
    cell_file.write_text(json.dumps(cell, indent=2) + "\n", encoding="utf-8")


def command_run(args: argparse.Namespace) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(args.work_dir).resolve()
    run_reference(work)
    for seed in args.seeds:  # seed-major: a stopped grid has every pooler at the same number of seeds
        for pooler in args.poolers:
            run_cell(args.regime, pooler, seed, work)


# ---------------------------------------------------------------- report


PLANNED_SEEDS = (0, 1, 2)


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def load_cells(regime: str) -> dict[str, list[dict[str, Any]]]:
    cells: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((RESULTS / regime).glob("*.json")):
        cell = json.loads(path.read_text(encoding="utf-8"))
        cells.setdefault(cell["pooler"], []).append(cell)
    return {p: sorted(cells[p], key=lambda c: c["seed"]) for p in POOLERS if p in cells}


COLUMNS = [
    *zip(STS_COLUMNS, STS_LABELS, strict=True),
    ("avg_all", "Avg. (all)"),
    ("avg_wmean", "Avg. (wmean)"),
    ("scifact_ndcg@10", "SciFact nDCG@10"),
]


def grid_status(regime: str, cells: dict[str, list[dict[str, Any]]]) -> str:
    """How much of the planned grid (every pooler × seeds 0, 1, 2) is done, and its cost per cell."""
    done = sum(len(runs) for runs in cells.values())
    planned = len(POOLERS) * len(PLANNED_SEEDS)
    minutes = [(c["train_wall_seconds"] + c["eval_wall_seconds"]) / 60 for r in cells.values() for c in r]
    status = f"Grid: {done} of {planned} planned cells ({len(POOLERS)} poolers × seeds "
    status += ", ".join(map(str, PLANNED_SEEDS)) + ")"
    if minutes:
        status += f"; median {statistics.median(minutes):.1f} min per cell (train + eval, as run)"
    if done < planned:
        status += (
            f". The missing cells are runs the grid has not reached yet, not runs left out: "
            f"`python benchmarks/compare_poolers.py run --regime {regime}` continues it"
        )
    return status + "."


def regime_section(regime: str, reference: dict[str, Any] | None) -> list[str]:
    cells = load_cells(regime)
    if not cells:
        return [f"_No cells of the `{regime}` regime yet._", ""]
    lines = [grid_status(regime, cells), ""]
    header = "| pooler | seeds | " + " | ".join(label for _, label in COLUMNS) + " | dev before → best |"
    lines += [header, "|" + " --- |" * (len(COLUMNS) + 3)]
    if reference:
        ref = reference["scores"]
        values = " | ".join(f"{ref[key]:.2f}" for key, _ in COLUMNS)
        lines.append(f"| untouched backbone (mean, no training) | – | {values} | – |")
    for pooler, runs in cells.items():
        parts = []
        for key, _ in COLUMNS:
            mean, std = mean_std([c["scores"][key] for c in runs])
            parts.append(f"{mean:.2f} ± {std:.2f}" if len(runs) > 1 else f"{mean:.2f}")
        before = statistics.fmean(c["train"]["dev_spearman_before"] * 100 for c in runs)
        best = statistics.fmean(c["train"]["best_dev_spearman"] * 100 for c in runs)
        lines.append(f"| `{pooler}` | {len(runs)} | " + " | ".join(parts) + f" | {before:.1f} → {best:.1f} |")
    lines += ["", *against_untouched(cells, reference), *verdicts(cells), ""]
    return lines


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
    from scipy.stats import ttest_ind

    out = ["Differences against `lwap` (Avg. all, SciFact nDCG@10). *Larger than the seed spread* means the"]
    out.append(
        "gap between the means exceeds the sum of the two standard deviations; Welch's t-test p beside it:"
    )
    if min(len(runs) for runs in cells.values()) < 3:
        out.append("(Fewer than three seeds per pooler so far: the spreads are rough estimates and")
        out.append("these verdicts provisional.)")
    out.append("")
    if "lwap" not in cells:
        return ["_No `lwap` cells: no comparison._"]
    for key, label in (("avg_all", "Avg. (all)"), ("scifact_ndcg@10", "SciFact nDCG@10")):
        base = [c["scores"][key] for c in cells["lwap"]]
        for pooler, runs in cells.items():
            if pooler == "lwap":
                continue
            other = [c["scores"][key] for c in runs]
            (m1, s1), (m2, s2) = mean_std(base), mean_std(other)
            delta = m1 - m2
            if min(len(base), len(other)) < 2:  # one seed has no spread to compare with
                out.append(f"- {label}: `lwap` − `{pooler}` = {delta:+.2f} (one seed: spread unknown)")
                continue
            larger = abs(delta) > s1 + s2
            p = ttest_ind(base, other, equal_var=False).pvalue
            verdict = "**larger than the seed spread**" if larger else "within the seed spread"
            out.append(f"- {label}: `lwap` − `{pooler}` = {delta:+.2f} ({verdict}; p = {p:.3f})")
    return out


def all_runs_table() -> list[str]:
    columns = "regime | pooler | seed | steps | best dev step | Avg. (all) | Avg. (wmean) | SciFact"
    lines, notes = [f"| {columns} | train s | eval s | commit |"], []
    lines.append("|" + " --- |" * 11)
    for regime in REGIMES:
        for pooler, runs in load_cells(regime).items():
            for c in runs:
                s = c["scores"]
                lines.append(
                    f"| {regime} | `{pooler}` | {c['seed']} | {c['train']['steps']} | "
                    f"{c['train']['best_step']} | "
                    f"{s['avg_all']:.2f} | {s['avg_wmean']:.2f} | {s['scifact_ndcg@10']:.2f} | "
                    f"{c['train_wall_seconds']:.0f} | {c['eval_wall_seconds']:.0f}"
                    f"{' (note)' if c.get('note') else ''} | {c['commit'][:10]} |"
                )
                if c.get("note"):
                    notes.append(f"- note on {regime} `{pooler}` seed {c['seed']}: {c['note']}")
    return [*lines, "", *notes] if notes else lines


def command_report(args: argparse.Namespace) -> None:
    ref_file = RESULTS / "untouched-backbone.json"
    reference = json.loads(ref_file.read_text(encoding="utf-8")) if ref_file.exists() else None
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
        "## Unsupervised SimCSE (Wikipedia sentences)",
        "",
        *regime_section("unsup", reference),
        "## Supervised SimCSE (SNLI triplets)",
        "",
        *regime_section("sup", reference),
        "## Every run",
        "",
        *all_runs_table(),
        "",
    ]
    Path(args.output).write_text("\n".join(text), encoding="utf-8")
    print(f"wrote {args.output}")


INTRO = """\
Backbone: the packaged all-MiniLM-L6-v2 (6 layers, H = 384) — the only pretrained encoder available
offline here. It was already trained contrastively with mean pooling on a billion pairs, so this measures
what a short SimCSE run does to an already strong sentence encoder with each pooler (new heads — `lwap`'s
attention, `cls`'s MLP — start random), not what the LWAP paper measured (bert-base from MLM
pre-training). No MLM-only backbone exists under `../shared/models/` at the time of writing.

Budget (identical for every pooler and seed; only `model.pooling` and `training.seed` differ, so a seed
gives every pooler the same data order):
- unsupervised: `configs/compare/unsup-minilm.yaml`, 200 steps × 64 Wikipedia sentences, lr 3e-5, bf16;
- supervised: `configs/compare/sup-minilm.yaml`, 1 epoch = 99 steps × 64 SNLI triplets, lr 2e-5, bf16;
- both: τ = 0.05, max length 32, STS-B dev every 50 / 33 steps, the best checkpoint kept (SimCSE's
  model selection), then `lwap eval --tasks all --precision bf16 --max-seq-length 256` (senteval data;
  cosine Spearman × 100; 256 tokens = the backbone's own inference length, for every row).

Time: a cell is about 5 minutes on 2 quiet cores (training ~3 min, evaluation ~2.4 min, most of it the
SciFact corpus at 256 tokens), so one regime's 18 cells take about 95 minutes.

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
    run.add_argument("--poolers", nargs="+", choices=POOLERS, default=list(POOLERS))
    run.add_argument("--work-dir", default=str(REPO / "outputs" / "compare"))
    run.set_defaults(func=command_run)
    report = commands.add_parser("report", help="write docs/RESULTS.md from the cell files")
    report.add_argument("--output", default=str(REPO / "docs" / "RESULTS.md"))
    report.set_defaults(func=command_report)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
