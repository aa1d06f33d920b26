"""Why the from-scratch BERT sat on the unigram plateau: short MLM runs from random weights, one lever each.

Every arm sees the same number of training tokens (`--tokens`, 3 M by default: a quarter of the shipped
bert-mlm-4l256 run's 12.9 M), with 10% warm-up and linear decay to 0 over its own steps, seed 0, and is
scored on the same held-out sentences as bert-mlm-4l256 (the same 4,000, the same masking rule), packed
into rows of 128 tokens so that arms trained on 128-token rows are scored on positions they trained.

The arms and the rule that picks the long run's recipe were written down (ARMS, RULE) before any arm ran;
docs/PRETRAIN.md "Why it plateaued" has the table and the curves this script writes:

    python benchmarks/pretrain_ablations.py run      # resumable; finished arms are skipped
    python benchmarks/pretrain_ablations.py report   # benchmarks/results/pretrain-ablations/, the figure

Each arm is one `benchmarks/pretrain_mlm.py --no-export` run under runs/pretrain/ablations/ARM.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "runs" / "pretrain" / "ablations"
RESULTS = REPO / "benchmarks" / "results" / "pretrain-ablations"
FIGURE = REPO / "docs" / "pretrain_ablations.png"

# today's recipe (bert-mlm-4l256): post-LayerNorm BERT, lr 5e-4, 64 rows x 256 tokens, dropout 0.1, clip 1.0
BASE = ["--arch", "bert", "--lr", "5e-4", "--batch", "64", "--seq-len", "256", "--dropout", "0.1",
        "--clip", "1.0"]  # fmt: skip
# Cramming's levers for compute-limited MLM (Geiping & Goldstein 2022): pre-LayerNorm, a higher peak rate,
# 128-token rows, no dropout in pretraining; and more optimizer steps for the same tokens (smaller batches)
CRAMMED = ["--arch", "prenorm", "--lr", "1e-3", "--batch", "32", "--seq-len", "128", "--dropout", "0",
           "--clip", "0.5"]  # fmt: skip


def changed(options: list[str], **new: str) -> list[str]:
    """`options` with some flags' values replaced (flag names without dashes, `_` for `-`)."""
    out = list(options)
    for key, value in new.items():
        out[out.index("--" + key.replace("_", "-")) + 1] = value
    return out


# (name, what it tests, options), in the order they run: the combined recipe first (is there a way off the
# plateau at all in this budget?), then today's recipe, then today's recipe with one lever changed each
ARMS: list[tuple[str, str, list[str]]] = [
    ("crammed", "all of Cramming's levers together", CRAMMED),
    ("base", "today's recipe (bert-mlm-4l256's)", BASE),
    ("base-batch16", "4x more optimizer steps for the same tokens (16 rows)", changed(BASE, batch="16")),
    ("base-prenorm", "pre-LayerNorm instead of post-LayerNorm", changed(BASE, arch="prenorm")),
    ("base-lr1e-3", "twice the peak learning rate", changed(BASE, lr="1e-3")),
    (
        "base-seq128",
        "rows of 128 tokens (128 of them: same tokens a step)",
        changed(BASE, seq_len="128", batch="128"),
    ),
    ("base-dropout0", "no dropout in pretraining", changed(BASE, dropout="0")),
]
RULE = (
    "The long run takes the recipe of the arm with the lowest held-out loss at the end of the budget; "
    "if the single levers each gain and 'crammed' is not the lowest, the long run combines the levers "
    "that gained. Held-out losses within 0.05 nats count as equal, and the cheaper recipe (more tokens "
    "per CPU-second) is taken."
)


def arm_command(name: str, options: list[str], tokens: int) -> list[str]:
    return [
        sys.executable, str(REPO / "benchmarks" / "pretrain_mlm.py"), "--name", f"ablation-{name}",
        "--run-dir", str(RUNS / name), "--cache-dir", str(RUNS / "data"), "--no-export", "--size", "4l256",
        "--max-tokens", str(tokens), "--warmup-frac", "0.1", "--evals", "6", "--eval-seq-len", "128",
        "--seed", "0", *options,
    ]  # fmt: skip


def run(args: argparse.Namespace) -> None:
    for name, _, options in ARMS:
        if args.arms and name not in args.arms:
            continue
        done = RUNS / name / "run.json"
        if done.is_file() and json.loads(done.read_text()).get("finished"):
            print(f"{name}: done", flush=True)
            continue
        print(f"{name}: running", flush=True)
        subprocess.run(arm_command(name, options, args.tokens), check=True, env={**os.environ})
        record = json.loads(done.read_text())
        record["finished"] = True
        done.write_text(json.dumps(record, indent=1))


def curve(name: str) -> list[dict]:
    with (RUNS / name / "loss_curve.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def report(args: argparse.Namespace) -> None:
    """Per arm: its held-out curve (CSV, committed) and one row of the table; all curves in one figure."""
    from matplotlib.figure import Figure

    RESULTS.mkdir(parents=True, exist_ok=True)
    axis = Figure(figsize=(7, 4.5)).subplots()
    rows = []
    for name, tests, options in ARMS:
        record = RUNS / name / "run.json"
        if not record.is_file() or not json.loads(record.read_text()).get("finished"):
            continue
        run_record = json.loads(record.read_text())
        points = [
            (int(r["tokens_seen"]), float(r["held_out_loss"])) for r in curve(name) if r["held_out_loss"]
        ]
        (RESULTS / f"{name}.csv").write_text(
            "tokens_seen,held_out_loss\n" + "".join(f"{t},{loss:.4f}\n" for t, loss in points)
        )
        axis.plot([t / 1e6 for t, _ in points], [loss for _, loss in points], marker="o", label=name)
        slices = run_record["slices"]
        cpu = sum(s.get("cpu_seconds", 0) for s in slices)
        tokens = max(s["tokens_seen"] for s in slices)
        rows.append((name, tests, " ".join(options), slices[-1]["to_step"], points[-1][1], tokens, cpu))
    unigram = json.loads((RUNS / ARMS[0][0] / "run.json").read_text())["unigram_loss"]  # one held-out set
    axis.axhline(unigram, color="grey", linestyle="--", label=f"unigram ({unigram:.2f})")
    axis.set(xlabel="training tokens (M)", ylabel="held-out MLM loss (nats)",
             title="MLM from random weights, one lever each (4 x 256 encoder)")  # fmt: skip
    axis.legend(fontsize=8)
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    axis.figure.savefig(FIGURE, dpi=100, bbox_inches="tight")
    lines = [
        "| arm | what it tests | options | held-out loss | perplexity | steps | tokens | tokens / CPU-s |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, tests, options, steps, loss, tokens, cpu in rows:
        lines.append(
            f"| {name} | {tests} | `{options}` | {loss:.3f} | {math.exp(loss):,.0f} | {steps} | "
            f"{tokens / 1e6:.2f} M | {tokens / cpu:,.0f} |"
        )
    table = "\n".join(lines) + "\n"
    (RESULTS / "README.md").write_text(
        "# MLM ablations from random weights (benchmarks/pretrain_ablations.py)\n\n"
        f"Unigram reference on the same held-out tokens: {unigram:.3f} nats.\n\nRule, fixed before the "
        f"runs: {RULE}\n\n{table}"
    )
    print(table)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tokens", type=int, default=3_000_000)
    r.add_argument("--arms", nargs="*", help="only these arms")
    sub.add_parser("report")
    args = p.parse_args(argv)
    {"run": run, "report": report}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
