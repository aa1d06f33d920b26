"""Does `torch.compile` make a bf16 SimCSE training step faster on this CPU? Issue 15's training lever.

    python benchmarks/train_compile.py [--steps 12] [--warmup 3] [--out FILE.json]

The step is `lwap train`'s, unrolled: tokenize a batch of 64 Wikipedia sentences (max length 32), the
LWAP model's SimCSE loss under bf16 autocast (`lwap.train.losses.SimCSELoss`, both views in one call),
backward, fused AdamW. Every variant starts from the same weights and reads the same batches. Variants:

  levers                 eager attention + fast dropout, no compile (what `lwap train` runs today)
  levers + compile subs  the same, with each layer's dense+dropout+LayerNorm blocks (attention output,
                         intermediate, output) compiled by inductor, their dropout back to nn.Dropout so
                         inductor draws the masks in its fused kernels
  eager + compile layers eager attention, nn.Dropout, each `BertLayer` compiled
  sdpa + compile layers  transformers' default attention, each `BertLayer` compiled

`dynamic=True` everywhere (batches have different lengths). The first step's seconds include the
compilation, from an empty inductor cache (a fresh `TORCHINDUCTOR_CACHE_DIR` per variant), and are
reported apart; the figure is the median of the steps after `--warmup`. Graph breaks
are counted by dynamo. Run it alone on the machine; each variant in its own process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VARIANTS = ("levers", "levers + compile subs", "eager + compile layers", "sdpa + compile layers")


def run_variant(variant: str, steps: int, warmup: int) -> dict[str, Any]:
    """One variant in this process: per-step seconds and dynamo's graph-break count."""
    import torch
    from speedbench.settings import BACKBONE, BATCH, MAX_LENGTH, read_sentences
    from torch._dynamo.utils import counters

    from lwap import build_model
    from lwap.train.fast_dropout import FastDropout, configure_for_training
    from lwap.train.losses import SimCSELoss

    torch.manual_seed(0)
    model = build_model(BACKBONE, "lwap", max_seq_length=MAX_LENGTH).train()
    bert = model[0].auto_model
    if variant.startswith("levers"):
        configure_for_training(model, "eager", True)
    elif variant.startswith("eager"):
        configure_for_training(model, "eager", False)
    if variant == "levers + compile subs":
        for layer in bert.encoder.layer:
            for block in (layer.attention.output, layer.intermediate, layer.output):
                for name, child in list(block.named_children()):
                    if isinstance(child, FastDropout):
                        setattr(block, name, torch.nn.Dropout(child.p))
                block.compile(dynamic=True)
    elif "compile layers" in variant:
        for layer in bert.encoder.layer:
            layer.compile(dynamic=True)
    loss_fn = SimCSELoss(model, temperature=0.05)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, fused=True)
    sentences = read_sentences(BATCH * (steps + warmup))
    seconds, losses = [], []
    for i in range(steps + warmup):
        start = time.perf_counter()
        features = model.preprocess(sentences[BATCH * i : BATCH * (i + 1)])
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = loss_fn([features], None)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        seconds.append(time.perf_counter() - start)
        losses.append(loss.item())
    return {
        "first_step_seconds": seconds[0],
        "step_seconds": seconds[warmup:],
        "median_step_seconds": statistics.median(seconds[warmup:]),
        "graph_breaks": sum(counters["graph_break"].values()),
        "losses": losses,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "train-compile.json"))
    parser.add_argument("--variant", help=argparse.SUPPRESS)  # one variant, in a child process
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.steps, args.warmup)))
        return
    from speedbench.machine import busy_cores

    busy = busy_cores()
    rows = {}
    for variant in VARIANTS:
        child = [sys.executable, __file__, "--variant", variant, "--steps", str(args.steps)]
        child += ["--warmup", str(args.warmup)]
        with tempfile.TemporaryDirectory(
            prefix="lwap-inductor-"
        ) as cache:  # a cold compile, as a user's first
            env = os.environ | {"TORCHINDUCTOR_CACHE_DIR": cache}
            done = subprocess.run(child, capture_output=True, text=True, check=True, env=env)
        r = rows[variant] = json.loads(done.stdout.strip().splitlines()[-1])
        r["against_levers"] = rows["levers"]["median_step_seconds"] / r["median_step_seconds"]
        print(
            f"{variant:24s} median step {r['median_step_seconds']:.3f} s "
            f"({r['against_levers']:.2f}× levers), "
            f"first step {r['first_step_seconds']:.1f} s, {r['graph_breaks']} graph breaks",
            flush=True,
        )
    result = {
        "command": "python benchmarks/train_compile.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "busy_cores_before": busy,
        "variants": rows,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
