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
# Added after the seven arms above ran (2026-12-04), not part of their pre-registered rule: the long run
# with crammed's recipe still predicted nearly the same words for every masked position after 20 M tokens
# (held-out 6.72), i.e. it hardly used the context. Suspect: packed rows give each token nine unrelated
# sentences of context (RoBERTa packs contiguous text of one document). This arm keeps crammed's levers
# with one sentence a row, 150 sentences a step (about crammed's 4 k tokens a step); its held-out rows are
# the same 4,000 sentences, one a row (`report` also scores each arm on the other's rows).
ADDED_ARMS: list[tuple[str, str, list[str]]] = [
    ("crammed-sentence", "crammed's levers, one sentence a row (added after the seven ran)",
     [*changed(CRAMMED, batch="150"), "--rows", "sentence"]),
]  # fmt: skip
ARMS += ADDED_ARMS
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
    """Each arm not yet recorded in RESULTS (committed: a fresh machine does not rerun it), in order."""
    for name, _, options in ARMS:
        record_if_finished(name, options)
        if (args.arms and name not in args.arms) or (RESULTS / f"{name}.json").is_file():
            print(f"{name}: {'recorded' if (RESULTS / f'{name}.json').is_file() else 'not asked for'}")
            continue
        print(f"{name}: running", flush=True)
        subprocess.run(arm_command(name, options, args.tokens), check=True, env={**os.environ})
        record(name, options)


def record_if_finished(name: str, options: list[str]) -> None:
    """An arm whose run reached its last step (its run.json then has the unigram loss) but is not recorded:
    a run stopped between its last step and the recording, or run by hand."""
    done = RUNS / name / "run.json"
    if (
        not (RESULTS / f"{name}.json").is_file()
        and done.is_file()
        and "unigram_loss" in json.loads(done.read_text())
    ):
        record(name, options)


def record(name: str, options: list[str]) -> None:
    """The arm's held-out curve and what it cost, from its run folder into RESULTS/NAME.json."""
    run_record = json.loads((RUNS / name / "run.json").read_text(encoding="utf-8"))
    with (RUNS / name / "loss_curve.csv").open(newline="") as handle:
        curve = [
            {
                "tokens_seen": int(r["tokens_seen"]),
                "step": int(r["step"]),
                "held_out_loss": float(r["held_out_loss"]),
            }
            for r in csv.DictReader(handle)
            if r["held_out_loss"]
        ]
    slices = run_record["slices"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(
        json.dumps(
            {
                "arm": name,
                "options": options,
                "recipe": run_record["recipe"],
                "curve": curve,
                "unigram_loss": run_record["unigram_loss"],
                "cpu_seconds": sum(s.get("cpu_seconds", 0) for s in slices),
                "seconds": sum(s["seconds"] for s in slices),
                "machines": sorted({s["machine"] for s in slices}),
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )


def held_out_loss(model_arm: str, rows_arm: str) -> float:
    """The final checkpoint of `model_arm` scored on `rows_arm`'s held-out rows (the same 4,000 sentences,
    packed or one a row), averaged as the Trainer's evaluation does (batches of 64, weighted by size)."""
    import torch

    sys.path.insert(0, str(REPO / "benchmarks"))
    import pretrain_mlm

    options = dict((name, options) for name, _, options in ARMS)
    model_args = pretrain_mlm.parse_args(arm_command(model_arm, options[model_arm], 0)[2:])
    rows_args = pretrain_mlm.parse_args(arm_command(rows_arm, options[rows_arm], 0)[2:])
    _, held_out, _ = pretrain_mlm.prepared_data(rows_args, pretrain_mlm.load_tokenizer(rows_args.seq_len))
    checkpoint = pretrain_mlm.finished_checkpoints(model_args.run_dir)[-1]
    model = (
        pretrain_mlm.MLM_CLASSES[model_args.arch].from_pretrained(checkpoint, trust_remote_code=False).eval()
    )
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(held_out), 64):
            batch = {k: torch.stack([r[k] for r in held_out[start : start + 64]]) for k in held_out[0]}
            total += model(**batch).loss.item() * len(batch["labels"])
    return total / len(held_out)


def report(args: argparse.Namespace) -> None:
    """A table row per recorded arm and all their held-out curves in one figure."""
    from matplotlib.figure import Figure

    axis = Figure(figsize=(7, 4.5)).subplots()
    lines = [
        "| arm | what it tests | options | held-out loss | perplexity | steps | tokens | tokens / CPU-s |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, _, options in ARMS:
        record_if_finished(name, options)
    recorded = [(name, tests) for name, tests, _ in ARMS if (RESULTS / f"{name}.json").is_file()]
    for name, tests in recorded:
        arm = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
        tokens = [p["tokens_seen"] / 1e6 for p in arm["curve"]]
        axis.plot(tokens, [p["held_out_loss"] for p in arm["curve"]], marker="o", label=name)
        last = arm["curve"][-1]
        lines.append(
            f"| {name} | {tests} | `{' '.join(arm['options'])}` | {last['held_out_loss']:.3f} | "
            f"{math.exp(last['held_out_loss']):,.0f} | {last['step']} | {last['tokens_seen'] / 1e6:.2f} M | "
            f"{last['tokens_seen'] / arm['cpu_seconds']:,.0f} |"
        )
    if not recorded:
        raise SystemExit("no arm recorded yet: run first")
    unigram = json.loads((RESULTS / f"{recorded[0][0]}.json").read_text(encoding="utf-8"))["unigram_loss"]
    axis.axhline(unigram, color="grey", linestyle="--", label=f"unigram ({unigram:.2f})")
    axis.set(xlabel="training tokens (M)", ylabel="held-out MLM loss (nats)",
             title="MLM from random weights, one lever each (4 x 256 encoder)")  # fmt: skip
    axis.legend(fontsize=8)
    axis.figure.savefig(FIGURE, dpi=100, bbox_inches="tight")
    cross = RESULTS / "cross.json"
    if cross.is_file():  # arms whose held-out rows differ, each scored on the other's rows
        lines += [
            "",
            "Cross-evaluation (`pretrain_ablations.py cross MODEL_ARM:ROWS_ARM`):",
            "",
            "| model of arm | scored on the held-out rows of arm | held-out loss |",
            "| --- | --- | ---: |",
        ]
        for pair, loss in json.loads(cross.read_text(encoding="utf-8")).items():
            model_arm, rows_arm = pair.split(":")
            lines.append(f"| {model_arm} | {rows_arm} | {loss:.3f} |")  # fmt: skip
    table = "\n".join(lines) + "\n"
    (RESULTS / "README.md").write_text(
        "# MLM ablations from random weights (benchmarks/pretrain_ablations.py)\n\n"
        f"Unigram reference on the same held-out tokens: {unigram:.3f} nats. Arms recorded: "
        f"{len(recorded)} of {len(ARMS)}.\n\nRule, fixed before the runs: {RULE}\n\n{table}",
        encoding="utf-8",
    )
    print(table)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tokens", type=int, default=3_000_000)
    r.add_argument("--arms", nargs="*", help="only these arms")
    sub.add_parser("report")
    c = sub.add_parser("cross", help="score arm A's final model on arm B's held-out rows")
    c.add_argument("pairs", nargs="+", help="MODEL_ARM:ROWS_ARM")
    args = p.parse_args(argv)
    if args.command == "cross":
        path = RESULTS / "cross.json"
        scores = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        for pair in args.pairs:
            model_arm, rows_arm = pair.split(":")
            scores[pair] = held_out_loss(model_arm, rows_arm)
            print(f"{model_arm} on {rows_arm}'s held-out rows: {scores[pair]:.4f}", flush=True)
        path.write_text(json.dumps(scores, indent=1), encoding="utf-8")  # `report` puts them in README
        return 0
    {"run": run, "report": report}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
