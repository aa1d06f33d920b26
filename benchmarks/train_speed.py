"""Training speed of one SimCSE step, fp32 vs bf16 autocast, measured the way `lwap train` runs it.

    python benchmarks/train_speed.py [--backbone sentence-transformers/all-MiniLM-L6-v2] [--pooling lwap]
        [--batch-size 64] [--max-seq-length 32] [--steps 10] [--rounds 3]

Runs the real `SimCSELoss` forward + backward + AdamW step on Wikipedia sentences from the data mirror.
The precisions alternate round by round (fp32, bf16, fp32, bf16, ...) so that a machine whose other
cores are busy slows both about equally; the median step time of each precision is reported as
training sentences per second (unsupervised: one corpus sentence = one example, encoded twice).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import statistics
import time

import torch

from lwap import build_model
from lwap.encoding import autocast
from lwap.paths import data_dir
from lwap.train.losses import SimCSELoss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--pooling", default="lwap")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-seq-length", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per precision, interleaved")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = build_model(args.backbone, args.pooling, max_seq_length=args.max_seq_length)
    model.train()
    loss_fn = SimCSELoss(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
    with gzip.open(data_dir() / "wiki/wiki_sentences_1m.txt.gz", "rt", encoding="utf-8") as handle:
        lines = [line.rstrip("\n") for line in itertools.islice(handle, args.batch_size * args.steps)]
    batches = [
        model.preprocess(lines[i : i + args.batch_size]) for i in range(0, len(lines), args.batch_size)
    ]

    def step(features: dict, precision: str) -> None:
        with autocast(precision):
            loss = loss_fn([dict(features)], torch.zeros(args.batch_size))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    for precision in ("fp32", "bf16"):  # warm-up (first-call allocations, oneDNN kernel selection)
        step(batches[0], precision)
    seconds: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for _ in range(args.rounds):
        for precision in ("fp32", "bf16"):
            for features in batches:
                start = time.perf_counter()
                step(features, precision)
                seconds[precision].append(time.perf_counter() - start)
    result = {
        "backbone": args.backbone,
        "pooling": args.pooling,
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
        "threads": torch.get_num_threads(),
    }
    for precision, times in seconds.items():
        median = statistics.median(times)
        result[precision] = {
            "median_step_s": round(median, 3),
            "sentences_per_s": round(args.batch_size / median, 1),
        }
    result["bf16_speedup"] = round(result["fp32"]["median_step_s"] / result["bf16"]["median_step_s"], 2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
