"""The GPU benchmark's settings and training variants (benchmarks/speed/gpu_speed.py): `lwap train`'s
trainer, the stock sentence-transformers recipe and a plain loop, each timed by speedbench's clock, and
the torch.compile levers, each checked to have compiled.

Unlike the CPU benchmark's variants (variants.py: the quick start on MiniLM, unsupervised only, worker
processes), these take a bert-base-shaped backbone and synthetic data, run in this process, cover the
supervised objective and GradCache, and move everything to the device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.speed.speedbench.timing import Clock, clock_callback, forward_marks
from benchmarks.speed.speedbench.variants import simcse_loss, stock_model

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


class NothingCompiled(RuntimeError):
    """A compile row that compiled nothing: its speed would be the eager speed under a wrong name."""


def trainer_clock(trainer: Any, model: Any, loss: Any, clock: Clock) -> None:
    """The clock on a trainer: its steps and, for the phase split (`clock.sync`), the forward's marks."""
    trainer.add_callback(clock_callback(clock))
    if clock.sync:  # the throughput run times whole steps: no hook inside a compiled model's graph
        forward_marks(model, loss, clock)


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


def lwap_trainer(pooling: str, setting: Setting, env: dict[str, Any], lever: str) -> Any:
    """`lwap train`'s trainer (BuiltTrainer) for one setting; with the compile lever, checked to compile."""
    from lwap.train.config import config_from_dict
    from lwap.train.trainer import build_trainer, training_inputs

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
        "eval": {"dev": None, "keep_best": False, "before_training": False},
    }
    config = config_from_dict(raw, "gpu_speed")
    out = env["work"] / "lwap-out"
    inputs = training_inputs(config, out, checkpoints=False)
    if lever == "torch.compile":  # the benchmark's own lever, on top of lwap's arguments
        compile_arguments(inputs.args, env["compile_backend"])
    built = build_trainer(config, out, inputs=inputs)
    if lever == "torch.compile":  # refused before it spends a second: the backend accelerate will use
        backend = built.trainer.accelerator.state.dynamo_plugin.backend
        if backend.value.lower() != env["compile_backend"]:
            raise NothingCompiled(f"the trainer's dynamo backend is {backend.value!r}, nothing would compile")
    return built


def lwap_variant(pooling: str, setting: Setting, env: dict[str, Any], clock: Clock, lever: str) -> None:
    built = lwap_trainer(pooling, setting, env, lever)
    trainer_clock(built.trainer, built.model, built.loss, clock)
    built.trainer.train()
    if lever == "torch.compile":
        import torch

        wrapped = built.trainer.model_wrapped
        if not isinstance(wrapped, torch._dynamo.eval_frame.OptimizedModule):
            raise NothingCompiled(f"the trainer's model is a {type(wrapped).__name__}, not torch.compile's")


def stock_variant(setting: Setting, env: dict[str, Any], clock: Clock) -> None:
    """sentence-transformers' documented SimCSE recipe, stock training arguments (GradCache's cached loss
    with mini-batches)."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer import losses
    from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    model = stock_model(str(env["backbone"]), TOKENS)
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
    trainer_clock(trainer, model, loss, clock)
    trainer.train()


def plain_variant(setting: Setting, env: dict[str, Any], clock: Clock, lever: str) -> None:
    """SimCSE by hand; pre-tokenised batches already on the device (no data loader)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    device = env["device"]
    tokenizer = AutoTokenizer.from_pretrained(str(env["backbone"]), trust_remote_code=False)
    model = (
        AutoModel.from_pretrained(str(env["backbone"]), add_pooling_layer=False, trust_remote_code=False)
        .to(device)
        .train()
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, fused=device == "cuda")
    n, texts = setting.batch, env["texts"]
    unsup = setting.objective == "unsup_simcse"
    rows = texts[:n] * 2 if unsup else texts[:n] + texts[n : 2 * n] + texts[2 * n : 3 * n]
    tokens = tokenizer(rows, padding="max_length", truncation=True, max_length=TOKENS, return_tensors="pt")
    tokens = {k: v.to(device) for k, v in tokens.items() if k in ("input_ids", "attention_mask")}
    dtype = torch.bfloat16 if env["precision"] == "bf16" else torch.float32

    def forward() -> torch.Tensor:
        with torch.autocast(device, dtype=dtype, enabled=env["precision"] == "bf16"):
            cls = model(**tokens).last_hidden_state[:, 0]
        return simcse_loss(cls, n, TEMPERATURE)

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
