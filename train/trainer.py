"""The trainer a config describes, assembled once: `training_inputs` decides the model, the training
arguments, the training data and the dev set; `build_trainer` adds the loss, the evaluator and the callbacks.

`lwap train` (lwap.train.run) drives what `build_trainer` returns; benchmarks/speed/speed.py times the very
same trainer, so the speed it reports is the speed of `lwap train`. Running it and writing the output
folder is lwap.train.run's job, not this module's.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments
from torch.utils.tensorboard import SummaryWriter
from transformers import set_seed
from transformers.integrations import TensorBoardCallback
from transformers.trainer_utils import SaveStrategy

from lwap.errors import ConfigError
from lwap.model import build_model, inference_max_seq_length
from lwap.train import outputs
from lwap.train.allocator import keep_freed_memory
from lwap.train.cached_loss import CachedSimCSELoss
from lwap.train.callbacks import (
    EvaluateAtEnd,
    MetricsCsv,
    ShareDevScores,
    StopOnSignal,
    Timing,
    process_group_exists,
)
from lwap.train.checkpoint_integrity import ChecksumCheckpoints
from lwap.train.config import ModelConfig, TrainConfig
from lwap.train.data import load_train_dataset
from lwap.train.dev_sets import DevSet, dev_evaluator, load_dev_set
from lwap.train.divergence import FP16_OVERFLOW_PATIENCE, SelectTheBest, StopOnNonFinite
from lwap.train.elastic import elastic_loss
from lwap.train.fast_dropout import configure_for_training
from lwap.train.head_training import head_learning_rate_mapping, head_warmup
from lwap.train.losses import SimCSELoss
from lwap.train.precision import OutsideTrainingAutocastEvaluation, Tf32ForTraining
from lwap.train.reporting import TENSORBOARD, checked_integrations, for_transformers, requested
from lwap.train.sampling import LengthGroupedBatches
from lwap.train.scored_losses import scored_loss

if TYPE_CHECKING:
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
    from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
    from transformers import TrainerCallback

# sentence-transformers' sampler names; length_grouped is lwap's own (lwap.train.sampling)
BATCH_SAMPLER_NAMES = {"random": "batch_sampler", "no_duplicates": "no_duplicates"}


@dataclass
class TrainingInputs:
    """What a run trains with, each decided once, by `training_inputs`: `build_trainer` takes them."""

    model: SentenceTransformer  # the model the run starts from (`initial_model`)
    args: SentenceTransformerTrainingArguments  # every training argument (`training_arguments`)
    dataset: Dataset  # the training data, columns as the loss reads them
    dev: DevSet | None  # the dev set that selects the kept checkpoint (eval.dev)


@dataclass
class BuiltTrainer:
    """What `build_trainer` assembled; `trainer.train()` runs it.

    `stop`, `timing` and `divergence` are the callbacks a run reads afterwards: where a signal stopped
    it, how long the loop and its evaluations took (for sentences/second), and where it diverged.
    """

    trainer: SentenceTransformerTrainer
    model: SentenceTransformer
    # the last: elastic losses (lwap.train.elastic), scored pairs' (lwap.train.scored_losses)
    loss: SimCSELoss | CachedSimCSELoss | torch.nn.Module
    evaluator: SentenceEvaluator | None
    dev: DevSet | None  # the dev set that selects the kept checkpoint (eval.dev)
    args: SentenceTransformerTrainingArguments
    dataset: Dataset
    out: Path
    stop: StopOnSignal
    timing: Timing
    divergence: StopOnNonFinite
    tf32: Tf32ForTraining


def training_inputs(
    config: TrainConfig, out: Path, *, resuming: bool = False, checkpoints: bool = True
) -> TrainingInputs:
    """The model, the training arguments, the training data and the dev set `config` describes, in the
    order they need each other; nothing is written under `out`. `lwap train` calls it before it touches
    the output folder, so a bad data file or dev set stops a run with nothing lost.

    `checkpoints=False` saves none at all, not even after the last step (which is then evaluated only if
    it falls on `eval.eval_steps`): for timing the loop alone, as benchmarks/speed/speed.py does; it needs
    `eval.keep_best: false`, since keeping the best reloads a checkpoint.
    """
    if not checkpoints and config.eval.keep_best:
        raise ValueError("checkpoints=False needs eval.keep_best: false (keeping the best reloads one)")
    t = config.training
    if t.keep_freed_memory and not training_on_cuda(t.device, torch.cuda.is_available()):
        keep_freed_memory()  # before the model and optimizer allocate
    model = initial_model(config)
    dev = load_dev_set(config.eval)
    args = training_arguments(config, out, model, dev, resuming=resuming, checkpoints=checkpoints)
    with args.main_process_first(desc="training data"):  # the main process fills the datasets cache first
        dataset = load_train_dataset(config.data, config.objective.name)
    return TrainingInputs(model, args, dataset, dev)


def training_arguments(
    config: TrainConfig,
    out: Path,
    model: SentenceTransformer,
    dev: DevSet | None,
    *,
    resuming: bool,
    checkpoints: bool = True,
) -> SentenceTransformerTrainingArguments:
    """Every sentence-transformers training argument of the run, decided here and changed nowhere after:
    the head's learning rate and the DDP flag follow the model's head, the sampler its tokenizer, the
    metric that selects the dev set (creating the arguments starts torch.distributed)."""
    t, e, o = config.training, config.eval, config.output
    integrations = checked_integrations(t.report_to)  # one line for a missing one
    use_cpu = not training_on_cuda(t.device, torch.cuda.is_available())
    if t.precision == "fp16" and use_cpu:
        raise ConfigError(
            "training.precision fp16 needs a CUDA GPU (fp16 training uses a gradient scaler); "
            "use bf16 on the CPU"
        )
    launched = "LOCAL_RANK" in os.environ and "WORLD_SIZE" in os.environ  # torchrun, even one process
    head_rates = head_learning_rate_mapping(model, t)  # the head's parameters → their learning rate
    if t.batch_sampler == "length_grouped":
        sampler: Any = LengthGroupedBatches(model.tokenizer, model.max_seq_length, t.length_group_size)
    else:
        sampler = BATCH_SAMPLER_NAMES[t.batch_sampler]
    try:
        args = SentenceTransformerTrainingArguments(
            output_dir=str(out / outputs.CHECKPOINTS_DIR),
            num_train_epochs=t.epochs,
            max_steps=t.max_steps,
            per_device_train_batch_size=t.per_device_batch_size,
            per_device_eval_batch_size=e.batch_size,
            learning_rate=t.learning_rate,
            learning_rate_mapping=head_rates,
            weight_decay=t.weight_decay,
            warmup_steps=t.warmup_ratio,  # < 1 means a fraction of the total steps
            lr_scheduler_type=t.lr_scheduler,
            bf16=t.precision == "bf16",
            fp16=t.precision == "fp16",  # transformers' fp16: autocast plus a gradient scaler
            use_cpu=use_cpu,
            ddp_backend="gloo" if use_cpu and launched else None,
            # explicitly set: left unset, transformers turns it on for a model that is not a
            # PreTrainedModel (a SentenceTransformer). Every trainable parameter gets a gradient (BERT's
            # pooler is frozen: lwap.model; tests/test_device_choices.py), except while the head warm-up
            # freezes the backbone (head_training.py)
            ddp_find_unused_parameters=t.head_warmup_steps > 0,
            seed=t.seed,
            dataloader_drop_last=t.drop_last,
            # tokenization runs in the collate function: in worker processes it overlaps the device's work
            dataloader_num_workers=t.dataloader_workers,
            dataloader_persistent_workers=t.dataloader_workers > 0,
            batch_sampler=sampler,
            eval_strategy="steps" if dev is not None else "no",
            eval_steps=e.eval_steps,
            eval_on_start=dev is not None and e.before_training and not resuming,
            # no checkpoints: none of transformers' periodic and final saves either
            save_strategy=SaveStrategy.STEPS if checkpoints else SaveStrategy.NO,
            save_steps=o.save_steps,
            save_total_limit=o.save_total_limit,
            load_best_model_at_end=e.keep_best,
            metric_for_best_model=dev.key if dev is not None else None,
            greater_is_better=True,
            logging_steps=t.logging_steps,
            logging_nan_inf_filter=False,  # a NaN loss stops the run (StopOnNonFinite): log it, not a mean
            logging_first_step=True,
            # TensorBoard is lwap's own callback, with a fixed folder (build_trainer); the rest pass through
            report_to=for_transformers(integrations) or "none",
            disable_tqdm=not t.progress_bar,
        )
    except ValueError as error:  # transformers' own consistency checks; ours run first, so this is rare
        raise ConfigError(f"training settings rejected by transformers: {error}") from None
    check_one_device_per_process(args.n_gpu, args.world_size)
    return args


def training_on_cuda(device: str, cuda_available: bool) -> bool:
    """Whether `training.device` (auto | cpu | cuda) trains on CUDA; ConfigError for cuda without one."""
    if device == "cuda" and not cuda_available:
        raise ConfigError("training.device is cuda, but torch sees no CUDA GPU (use cpu or auto)")
    return device == "cuda" or (device == "auto" and cuda_available)


def check_one_device_per_process(n_gpu: int, world_size: int) -> None:
    """Refuse transformers' DataParallel: one process driving several GPUs.

    It would split each batch across the GPUs and encode per_device_batch_size × GPUs sentences per
    step, while lwap prints and saves the batch size it was given: SimCSE's negatives would change
    silently (and DataParallel is slower than DDP). One process per GPU (torchrun) or one GPU.
    """
    if n_gpu > 1 and world_size == 1:
        raise ConfigError(
            f"this process sees {n_gpu} GPUs and would train with DataParallel; run one process per GPU "
            f"(torchrun --nproc_per_node={n_gpu} -m lwap.train ...) or pick one (CUDA_VISIBLE_DEVICES=0)"
        )


def apply_device_settings(config: TrainConfig, model: Any, on_cuda: bool, say: bool) -> None:
    """The CPU speed levers, for where the model trains (TF32 on CUDA: precision.Tf32ForTraining).

    The CPU levers (attention eager, fast_dropout, keep_freed_memory) were measured on CPUs only
    (docs/BENCHMARKS.md), so on CUDA they are skipped, saying so.
    """
    t = config.training
    if on_cuda:
        levers = [
            name
            for name, on in (
                ("attention: eager", t.attention != "sdpa"),
                ("fast_dropout", t.fast_dropout),
                ("keep_freed_memory", t.keep_freed_memory),
            )
            if on
        ]
        if levers and say:
            print(
                f"lwap train: CPU speed options skipped on CUDA (measured on CPUs only): {', '.join(levers)}",
                flush=True,
            )
        return
    if t.attention != "sdpa" or t.fast_dropout:
        configure_for_training(model, t.attention, t.fast_dropout)


def build_configured_model(m: ModelConfig, device: str | None = None) -> SentenceTransformer:
    """The SentenceTransformer a config's `model` section describes (backbone + pooling head)."""
    return build_model(
        m.backbone,
        m.pooling,
        max_seq_length=m.max_seq_length,
        trust_remote_code=m.trust_remote_code,
        device=device,
        dropout=m.dropout,
        **m.pooler_options(),
    )


def build_trainer(
    config: TrainConfig,
    out: Path,
    inputs: TrainingInputs,
    *,
    callbacks: Sequence[TrainerCallback] = (),
) -> BuiltTrainer:
    """The `SentenceTransformerTrainer` that `lwap train` runs for `config`, on `inputs` (`training_inputs`),
    writing logs into `out`; `callbacks` come after lwap's own. The loss, the evaluator and the callbacks
    follow from the config and the inputs: nothing here changes a training argument.
    """
    model, args, dataset, dev = inputs.model, inputs.args, inputs.dataset, inputs.dev
    on_cuda = args.device.type == "cuda"
    checkpoints = args.save_strategy != SaveStrategy.NO
    if config.objective.name == "scored_pairs":  # sentence-transformers' own (config_checks: no extras)
        loss = scored_loss(model, config.objective.scored_loss, config.objective.temperature)
    else:
        loss = _simcse_loss(config, model)
    apply_device_settings(config, model, on_cuda, say=args.process_index == 0)
    evaluator = None
    if dev is not None:
        # scored at the length the saved model will read (SimCSE evaluates without the training truncation)
        evaluator = dev_evaluator(dev, config.eval, inference_max_seq_length(model))
    stop, timing = StopOnSignal(), Timing()
    tf32 = Tf32ForTraining(config.training.tf32 if on_cuda else None)
    own: list[Any] = [ShareDevScores(), stop, timing, tf32]  # ShareDevScores first: see its docstring
    if checkpoints:  # EvaluateAtEnd also checkpoints the last step
        own += [EvaluateAtEnd(evaluate=dev is not None), ChecksumCheckpoints()]  # sizes + sha256
    own += head_warmup(model, config.training, announce=args.process_index == 0)  # the backbone frozen first
    if checkpoints and config.eval.keep_best:
        own.append(SelectTheBest(dev.key, start_competes=config.eval.start_competes))
    # after every callback that asks for a save or an evaluation, so it can cancel a broken step's
    divergence = StopOnNonFinite(
        loss,
        dev.key if dev is not None else None,
        signal=stop,
        dev_name=dev.name if dev is not None else "dev score",
        patience=FP16_OVERFLOW_PATIENCE if config.training.precision == "fp16" else 1,
    )
    own.append(divergence)
    if args.process_index == 0:
        own.append(MetricsCsv(out / outputs.METRICS_CSV))
        if TENSORBOARD in requested(config.training.report_to):
            writer = SummaryWriter(log_dir=str(out / outputs.TENSORBOARD_DIR))
            own.append(TensorBoardCallback(tb_writer=writer))
    with _widget_examples_skipped(model, skipped=args.disable_tqdm):
        trainer = OutsideTrainingAutocastEvaluation(
            model=model,
            args=args,
            train_dataset=dataset,
            loss=loss,
            evaluator=evaluator,
            callbacks=own + list(callbacks),
        )
    return BuiltTrainer(
        trainer, model, loss, evaluator, dev, args, dataset, out, stop, timing, divergence, tf32
    )


@contextlib.contextmanager
def _widget_examples_skipped(model: SentenceTransformer, skipped: bool) -> Iterator[None]:
    """With the bars off (`training.progress_bar: false`), sentence-transformers' card callback does not
    pick the card's widget examples: it draws a tqdm bar for that ("Computing widget examples") that no
    setting turns off (the card data's `generate_widget_examples` gates another step). lwap's card
    (lwap.train.model_card) shows no widget, so nothing is lost."""
    card = model.model_card_data
    if skipped:
        card.set_widget_examples = lambda dataset: None  # on the instance: its class's method is left as is
    try:
        yield
    finally:
        if skipped:
            del card.set_widget_examples


def _simcse_loss(config: TrainConfig, model: SentenceTransformer) -> torch.nn.Module:
    """SimCSE's loss, with GradCache mini-batches and the elastic embeddings where the config asks."""
    loss: torch.nn.Module = SimCSELoss(
        model,
        temperature=config.objective.temperature,
        hard_negative_weight=config.objective.hard_negative_weight,
        # every process group (creating `args` made it), even torchrun's of one process: negatives are
        # gathered across processes, and a one-GPU torchrun exercises the gather
        gather_across_devices=process_group_exists(),
    )
    if config.training.mini_batch_size is not None:
        loss = CachedSimCSELoss(loss, config.training.mini_batch_size)
    if config.objective.matryoshka_dims is not None or config.objective.depths is not None:
        loss = elastic_loss(config.objective, model, loss)  # Matryoshka, depths (docs/TRAINING.md)
    return loss


def initial_model(config: TrainConfig) -> SentenceTransformer:
    """The model a run starts from. Seeded, so the new pooling head starts identical in every process
    and every run, and a run whose best is step 0 can rebuild those weights (lwap.train.run does).

    Built on the CPU: the trainer moves it to the training device, and `--device cpu` on a GPU machine
    must not touch the GPU (sentence-transformers would otherwise place it on CUDA first)."""
    set_seed(config.training.seed)
    return build_configured_model(config.model, device="cpu")
