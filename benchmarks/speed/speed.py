"""Training and encoding speed of lwap against the stock sentence-transformers recipe and a minimal loop; MFU.

    python benchmarks/speed/speed.py           # the full measurement: docs/BENCHMARKS.md and .json
    python benchmarks/speed/speed.py --quick   # smoke test of every part (a few minutes), into a temp folder
    python benchmarks/speed/speed.py --render  # only docs/BENCHMARKS.md again, from the JSON beside it

Everything is measured in this one process, round-robin: each round runs every training variant for
`--warmup` + `--steps` steps (only the last `--steps` are timed), so a machine whose load changes slows
all variants alike; the figures are medians over all rounds. Training variants (unsupervised SimCSE on the
packaged all-MiniLM-L6-v2, batch 64, max length 32, the first 16,000 Wikipedia sentences of the mirror):

  lwap train      the real `lwap train` machinery: configs/quickstart.yaml (+ overrides), the trainer that
                  `lwap.train.build_trainer` builds for `lwap train`, driven by `trainer.train()` with STS-B
                  evaluation and checkpoints off; `lwap` and `cls` pooling, speed levers off and on.
  stock ST        sentence-transformers' own SimCSE recipe: Transformer(max_seq_length=32) + Pooling(mean),
                  MultipleNegativesRankingLoss on (s, s) pairs, SentenceTransformerTrainer, stock arguments.
  minimal loop    AutoModel + [CLS] + InfoNCE (τ 0.05) + AdamW in a hand-written loop: the framework floor.

A step's time is the interval between two consecutive step ends, so it includes fetching and tokenizing the
batch, forward, backward, optimizer and every callback (logging, metrics CSV, TensorBoard). FLOPs per step
are counted from the padded shapes the backbone really saw (a forward hook); the hardware bound is the rate
of torch matmuls with the model's own linear-layer shapes, measured in the same run.

This script parses the flags and runs the parts in benchmarks/speed/speedbench/ (one concern per module).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


from benchmarks import REPO
from benchmarks.speed.speedbench.flops import Shapes
from benchmarks.speed.speedbench.machine import busy_cores, machine_info
from benchmarks.speed.speedbench.measure import encode_breakdown, encode_speed, matmul_bound
from benchmarks.speed.speedbench.report import write_report
from benchmarks.speed.speedbench.settings import LEVERS, PROFILED, TRAIN_SENTENCES, read_sentences
from benchmarks.speed.speedbench.throughput import summarize
from benchmarks.speed.speedbench.timing import Step
from benchmarks.speed.speedbench.variants import all_variants
from benchmarks.speed.speedbench.workers import Workers


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke test: 1 round, few steps, 512 sentences")
    parser.add_argument("--rounds", type=int, help="rounds over all training variants (default 5)")
    parser.add_argument("--steps", type=int, help="timed steps per variant and round (default 10)")
    parser.add_argument("--warmup", type=int, help="untimed steps before them in each round (default 2)")
    parser.add_argument("--encode-sentences", type=int, help="default 10000")
    parser.add_argument("--encode-rounds", type=int, help="default 3")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's, = cores)")
    parser.add_argument("--only", help="comma-separated training variant keys (default: all)")
    parser.add_argument("--no-encode", action="store_true")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--out", help="Markdown report (default docs/BENCHMARKS.md; --quick: a temp folder)")
    parser.add_argument(
        "--encode-only",
        action="store_true",
        help="rerun only the encoding comparison into the existing JSON and rewrite the Markdown",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="only rewrite the Markdown from the JSON beside it (e.g. after speed_levers.py), no timing",
    )
    return parser.parse_args()


def rerun_encoding(args: argparse.Namespace, md_path: Path) -> None:
    """--encode-only: measure encoding again into the existing JSON (the caller re-renders the Markdown)."""
    result = json.loads(md_path.with_suffix(".json").read_text(encoding="utf-8"))
    import torch

    threads = args.threads or torch.get_num_threads()
    n, rounds = args.encode_sentences or 10_000, args.encode_rounds or 3
    result["encoding_busy_cores_before"] = busy_cores()
    result["encoding_bound"] = matmul_bound(threads, repeats=20)  # the encode targets' cap, this run
    result["encoding"] = encode_speed(read_sentences(n), rounds, threads)
    result["encoding_breakdown"] = encode_breakdown(read_sentences(min(n, 2000)), threads)
    result["encoding_date"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    result["encoding_command"] = " ".join(["python benchmarks/speed/speed.py", *sys.argv[1:]])
    result["settings"] |= {"encode_sentences": n, "encode_rounds": rounds}
    md_path.with_suffix(".json").write_text(json.dumps(result, indent=1), encoding="utf-8")


def render(md_path: Path) -> None:
    """--render: the Markdown from the JSON beside it, with the current notes; no timing."""
    result = json.loads(md_path.with_suffix(".json").read_text(encoding="utf-8"))
    result["notes_md"] = (REPO / "benchmarks/speed/speed_notes.md").read_text(encoding="utf-8")
    write_report(result, md_path)
    print(f"speed: rewrote {md_path} from {md_path.with_suffix('.json')}")


def measure(args: argparse.Namespace) -> None:
    """The measurement: matmul bound, training variants round-robin, profiles, encoding; JSON + Markdown."""
    quick = args.quick
    rounds = args.rounds or (1 if quick else 5)
    steps = args.steps or (3 if quick else 10)
    warmup = args.warmup or (1 if quick else 2)
    encode_n = args.encode_sentences or (512 if quick else 10_000)
    encode_rounds = args.encode_rounds or (1 if quick else 3)
    if args.out:
        md_path = Path(args.out)
    elif quick:
        md_path = Path(tempfile.mkdtemp(prefix="lwap-speed-quick-")) / "BENCHMARKS.md"
    else:
        md_path = REPO / "docs/BENCHMARKS.md"

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    threads = args.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    busy_before = busy_cores()
    load_before = os.getloadavg()
    started = time.perf_counter()
    variants = all_variants()
    if args.only:
        wanted = set(args.only.split(","))
        variants = [v for v in variants if v.key in wanted]
    variants.sort(key=lambda v: (v.precision, v.key))

    print(f"speed: {len(variants)} training variants, {rounds} rounds × ({warmup}+{steps}) steps", flush=True)
    bound = matmul_bound(threads, repeats=5 if quick else 20)
    print(
        f"speed: matmul bound fp32 {bound['fp32']['bound_gflops']:.0f}, "
        f"bf16 {bound['bf16']['bound_gflops']:.0f} GFLOP/s",
        flush=True,
    )
    workers = Workers(variants, threads)
    profiles = []
    try:
        for r in range(rounds):
            for v in variants:
                t0 = time.perf_counter()
                timed, shapes = workers.call(v, "run", warmup + steps + 1, seed=42 + r)
                v.steps += [Step(seconds, forwards) for seconds, forwards in timed[warmup:]]
                v.rounds.append(sum(seconds for seconds, _ in timed[warmup:]))
                v.shapes = Shapes(**shapes)
                print(f"speed: round {r + 1}/{rounds} {v.key}: {time.perf_counter() - t0:.0f} s", flush=True)
        if not args.no_profile:
            for v in variants:
                if v.key in PROFILED:
                    profiles.append(workers.call(v, "profile", 3 if quick else 6))
            print("speed: profiles done", flush=True)
    finally:
        workers.close()
    rows = {v.key: summarize(v, bound) for v in variants}
    result: dict[str, Any] = {
        "settings": {
            "quick": quick,
            "rounds": rounds,
            "steps": steps,
            "warmup": warmup,
            "train_sentences": TRAIN_SENTENCES,
            "encode_sentences": encode_n,
            "encode_rounds": encode_rounds,
            "levers": LEVERS,
        },
        "machine": machine_info(threads),
        "matmul_bound": bound,
        "shapes": vars(next(v.shapes for v in variants if v.shapes)),
        "training": rows,
        "training_step_seconds": {v.key: [s.seconds for s in v.steps] for v in variants},
        "profiles": profiles,
    }
    if not args.no_encode:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        result["encoding"] = encode_speed(read_sentences(encode_n), encode_rounds, threads)
        result["encoding_breakdown"] = encode_breakdown(read_sentences(min(encode_n, 2000)), threads)
        print("speed: encoding done", flush=True)
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    result["busy_cores_before"] = busy_before
    result["seconds"] = time.perf_counter() - started
    notes = REPO / "benchmarks/speed/speed_notes.md"
    if notes.is_file():
        result["notes_md"] = notes.read_text(encoding="utf-8")
    print(f"speed: {save(result, md_path)} in {result['seconds'] / 60:.1f} min", flush=True)


def save(result: dict[str, Any], md_path: Path) -> str:
    """The JSON beside `md_path` and, where the run has the row the report reads every speed-up against
    (`stock/fp32`, which `--only` may leave out), the Markdown report; says which files it wrote."""
    json_path = md_path.with_suffix(".json")
    md_path.parent.mkdir(parents=True, exist_ok=True)
    report = "stock/fp32" in result["training"]
    if report:
        write_report(result, md_path)
    json_path.write_text(json.dumps({k: v for k, v in result.items() if k != "notes_md"}, indent=1))
    if report:
        return f"wrote {md_path} and {json_path}"
    return f"wrote {json_path}; not {md_path}: its tables are read against stock/fp32, not run here"


def main() -> None:
    args = parse_args()
    if args.encode_only or args.render:
        md_path = Path(args.out) if args.out else REPO / "docs/BENCHMARKS.md"
        if args.encode_only:
            rerun_encoding(args, md_path)
        render(md_path)
    else:
        measure(args)


if __name__ == "__main__":
    sys.exit(main())
