"""Does a speed lever cost quality? The quick start, shortened, with each lever on, scored on STS-B dev.

    python benchmarks/speed/speed_levers.py [--steps 100] [--seeds 42,43] [--runs DIR] [--only NAME,...]

Runs `lwap train configs/quickstart.yaml` (unsupervised SimCSE, LWAP on the packaged all-MiniLM-L6-v2,
bf16, lr 1e-4, batch 64) for `--steps` steps (its first steps × 64 Wikipedia sentences) with STS-B dev
evaluated every 50 steps, once per lever setting and seed; the same seed means the same data and
initialisation. Writes benchmarks/results/speed-levers/results.{json,md}; docs/BENCHMARKS.md includes the
table. The runs are sequential, so their sentences/s are only indicative (the interleaved measurement
is benchmarks/speed/speed.py); use OMP_NUM_THREADS to control the threads.
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

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO
from benchmarks.speed.speedbench.machine import commit

RESULTS = REPO / "benchmarks/results/speed-levers"
# Every setting starts from the levers off, whatever configs/quickstart.yaml ships (it ships them on).
OFF = [
    "training.keep_freed_memory=false",
    "training.batch_sampler=random",
    "training.attention=sdpa",
    "training.fast_dropout=false",
]
SETTINGS: dict[str, list[str]] = {
    "baseline": [],
    "keep_freed_memory": ["training.keep_freed_memory=true"],
    "length_grouped": ["training.batch_sampler=length_grouped"],
    "eager": ["training.attention=eager"],
    "eager+fast_dropout": ["training.attention=eager", "training.fast_dropout=true"],
    "all": [
        "training.keep_freed_memory=true",
        "training.batch_sampler=length_grouped",
        "training.attention=eager",
        "training.fast_dropout=true",
    ],
}


def run(name: str, overrides: list[str], seed: int, steps: int, runs: Path) -> dict:
    out = runs / f"{name}-seed{seed}"
    command = [sys.executable, "-m", "lwap", "train", str(REPO / "configs/quickstart.yaml"), "--overwrite"]
    sets = [
        f"output.dir={out}",
        f"data.max_examples={steps * 64}",
        f"training.seed={seed}",
        "training.progress_bar=false",
        "eval.eval_steps=50",
        "output.save_steps=50",
        *OFF,
        *overrides,
    ]
    for item in sets:
        command += ["--set", item]
    start = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True)
    summary = json.loads((out / "train_summary.json").read_text())
    by_step = summary["dev_scores_by_step"]  # STS-B dev: the quick start's dev set
    return {
        "setting": name,
        "overrides": overrides,
        "seed": seed,
        "steps": summary["steps"],
        "dev_before": summary["dev_score_before"],
        "dev_last_step": by_step[-1][1] if by_step else None,
        "dev_final_model": summary["final_model_dev_score"],
        "final_model_step": summary["final_model_step"],
        "dev_by_step": by_step,
        "train_loop_seconds": summary["train_loop_seconds"],
        "eval_seconds": summary["eval_seconds"],
        "sentences_per_second": summary["sentences_per_second"],
        "wall_seconds": round(time.perf_counter() - start, 1),
        "load_average_after": os.getloadavg()[0],
    }


def markdown(results: list[dict], meta: dict) -> str:
    base = {r["seed"]: r for r in results if r["setting"] == "baseline"}
    earlier = meta.get("earlier", meta)
    commits = {r.get("commit", earlier["commit"]) for r in results}
    recorded = [earlier.get("command", "python benchmarks/speed/speed_levers.py"), meta["command"]]
    commands = dict.fromkeys(recorded)
    lines = [
        "STS-B dev Spearman (cosine) of `lwap train configs/quickstart.yaml` shortened to "
        f"{meta['steps']} steps "
        "(evaluated every 50), per lever setting and seed; " + " and ".join(f"`{c}`" for c in commands) + " "
        f"({meta['date']}, commit {', '.join(sorted(commits))}, OMP_NUM_THREADS={meta['threads']}, "
        "load average "
        f"{meta['load_before']:.1f} at the start"
        + ("; the machine was busy" if meta["load_before"] > 0.5 else "")
        + ").",
        "",
        "| setting | seed | dev before | dev at last step | Δ vs baseline (same seed) | training loop | "
        "sentences/s (sequential, indicative) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        b = base.get(r["seed"])
        delta = "" if b is None or r is b else f"{r['dev_last_step'] - b['dev_last_step']:+.4f}"
        lines.append(
            f"| {r['setting']} | {r['seed']} | {r['dev_before']:.4f} | {r['dev_last_step']:.4f} | {delta} | "
            f"{r['train_loop_seconds'] - r['eval_seconds']:.0f} s | {r['sentences_per_second']:.1f} |"
        )
    seeds = sorted(base)
    if len(seeds) > 1:
        spread = [base[s]["dev_last_step"] for s in seeds]
        lines += [
            "",
            f"Seed-to-seed spread of the baseline: {min(spread):.4f}–{max(spread):.4f} "
            f"(std {statistics.stdev(spread):.4f}); a lever's Δ inside that spread is not a measurable "
            "effect.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seeds", default="42,43", help="seeds for baseline and all; the rest use the first")
    parser.add_argument("--runs", default="/tmp/lwap-speed-levers", help="where the trained models go")
    parser.add_argument("--only", help="comma-separated setting names (default: all)")
    parser.add_argument("--every-seed", action="store_true", help="run every setting with every seed")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    names = args.only.split(",") if args.only else list(SETTINGS)
    meta = {
        "steps": args.steps,
        "commit": commit(),
        "date": time.strftime("%Y-%m-%d"),
        "threads": os.environ.get("OMP_NUM_THREADS", "default"),
        "load_before": os.getloadavg()[0],
        "command": " ".join(["python benchmarks/speed/speed_levers.py", *sys.argv[1:]]),
    }
    # runs accumulate across invocations (same steps): a rerun of a setting and seed replaces the old one
    previous = RESULTS / "results.json"
    results = []
    if previous.is_file():
        old = json.loads(previous.read_text())
        if old["meta"]["steps"] == args.steps:
            results, meta["earlier"] = old["runs"], old["meta"]
    order = list(SETTINGS)
    for seed_index, seed in enumerate(seeds):
        for name in names:
            if seed_index > 0 and name not in ("baseline", "all") and not args.every_seed:
                continue
            done = run(name, SETTINGS[name], seed, args.steps, Path(args.runs)) | {"commit": meta["commit"]}
            results = [r for r in results if (r["setting"], r["seed"]) != (name, seed)] + [done]
            results.sort(key=lambda r: (r["seed"], order.index(r["setting"])))
            RESULTS.mkdir(parents=True, exist_ok=True)
            previous.write_text(json.dumps({"meta": meta, "runs": results}, indent=1))
            (RESULTS / "results.md").write_text(markdown(results, meta), encoding="utf-8")
    print(markdown(results, meta))


if __name__ == "__main__":
    main()
