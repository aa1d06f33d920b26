"""Every key a training config may set: its section, type, default, allowed values and what it does.

The one description of a config. Loading and checking (`lwap.train.config`) read the types and choices
from here, and the annotated reference (`lwap.train.config_reference`: `lwap train --show-config`,
docs/TRAINING.md "Every key") prints the defaults and descriptions, so a new key is one `key(...)` line
in its section (a pooler's option: one `Option` in `lwap.registry`, added to `ModelConfig` below).
A shipped config lists only the keys it changes.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

from lwap import registry

OBJECTIVES = ("unsup_simcse", "sup_simcse", "scored_pairs")
# sentence-transformers' losses for (text1, text2, score) data (lwap.train.scored_losses)
SCORED_LOSSES = ("cosent", "angle", "cosine")
PRECISIONS = ("fp32", "bf16", "fp16")
DEVICES = ("auto", "cpu", "cuda")
LR_SCHEDULERS = ("linear", "constant", "constant_with_warmup", "cosine")
BATCH_SAMPLERS = ("random", "no_duplicates", "length_grouped")
ATTENTIONS = ("sdpa", "eager")
EVAL_PRECISIONS = ("fp32", "bf16")
DEV_COLUMNS = ("sentence1", "sentence2", "score")  # a scored pairs dev file's columns by default
# every metric `eval.dev_metric` may name: a pairs file's, then a BEIR folder's (lwap.eval.search)
PAIRS_METRICS = ("spearman",)
SEARCH_DEV_METRICS = ("ndcg@10", "mrr@10", "recall@100", "recall@10", "recall@1", "map@100")
SEED_MAX = 2**32 - 1
REQUIRED = dataclasses.MISSING


def key(default: Any, what: str, *, choices: tuple[str, ...] = (), example: Any = None) -> Any:
    """A config key: its default (REQUIRED: none; `example` then shows a value), what it does, and the
    values a string key allows (checked on load)."""
    metadata = {"what": what, "choices": choices, "example": example}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclass
class OutputConfig:
    """Where the run writes, and how often it checkpoints."""

    dir: str = key(
        REQUIRED,
        "the run's folder (model, checkpoints, logs); `~` and `$VARS` are expanded",
        example="outputs/my-run",
    )
    overwrite: bool = key(False, "replace a finished model already in `dir` (else the run is refused)")
    save_steps: int = key(
        250, "checkpoint every N optimizer steps (a multiple of eval.eval_steps when eval.keep_best)"
    )
    save_total_limit: int | None = key(
        2, "checkpoints kept on disk (the best one is always kept); null = all"
    )


def _with_pooler_options(cls: type) -> type:
    """A field per option in lwap.registry (lwap_layers, score_scale, ...): new options need no edit here."""
    for option in registry.OPTIONS.values():
        cls.__annotations__[option.name] = option.type
        setattr(cls, option.name, key(option.default, option.help, choices=option.choices))
    return cls


@dataclass
@_with_pooler_options
class ModelConfig:
    """Backbone and pooler, as `lwap.build_model` takes them; the pooler options follow these fields."""

    backbone: str = key(
        REQUIRED, "hub id or local folder", example="sentence-transformers/all-MiniLM-L6-v2"
    )
    pooling: str = key(REQUIRED, "the pooler", choices=registry.POOLINGS, example="lwap")
    max_seq_length: int = key(
        32, "tokens per sentence in training (saved models encode at the backbone's own length)"
    )
    dropout: float | None = key(
        None,
        "the backbone's hidden and attention dropout in training, SimCSE's noise (its paper: 0.1 best on "
        "bert-base); null = the backbone's config; kept in the saved config",
    )
    trust_remote_code: bool = key(
        False,
        "true lets a backbone folder run code of its own (an auto_map in its config.json); off, lwap "
        "refuses such a folder with one line",
    )

    def pooler_options(self) -> dict[str, Any]:
        """Every pooler option's value (build_model uses the chosen pooler's own)."""
        return {name: getattr(self, name) for name in registry.OPTIONS}


@dataclass
class DataConfig:
    """Training data: a file (.txt, .csv, .tsv, .jsonl, .json, .parquet; lwap.train.data), a `datasets`
    save_to_disk folder, or a hub id; columns by name in every format but plain text."""

    train: str = key(
        REQUIRED,
        "a file (.txt, .csv, .tsv, .jsonl, .json, .parquet; may use $LWAP_DATA_DIR), a `datasets` "
        "save_to_disk folder or a Hugging Face dataset id",
        example="$LWAP_DATA_DIR/wiki/wiki_sentences_1m.txt.gz",
    )
    max_examples: int | None = key(None, "use only the first N examples (lines/rows); null = all")
    text_column: str = key(
        "text", "unsup_simcse from a table (any format but a text file): the sentence column"
    )
    anchor_column: str = key("sent0", "sup_simcse: the premise")
    positive_column: str = key("sent1", "sup_simcse: the entailment hypothesis")
    hard_negative_column: str | None = key("hard_neg", "sup_simcse: the contradiction; null = pairs only")
    hard_negative_columns: list[str] | None = key(
        None,
        "sup_simcse: several hard negatives, a list of columns ([neg_1, neg_2]), every one in the loss; "
        "setting it turns hard_negative_column off (both set is refused)",
    )
    scored_columns: list[str] = key(
        list(DEV_COLUMNS), "scored_pairs: the two texts and the score (a number), by column name"
    )
    score_range: list[float] | None = key(
        None,
        "scored_pairs: [low, high] of the scores (e.g. [0, 5]), each mapped to [0, 1]; a score outside is "
        "refused; null = the data's own min and max",
    )
    column_names: list[str] | None = key(
        None,
        "a CSV/TSV file without a header row: its columns' names, in order (the first line is then data, "
        "e.g. [sentence1, sentence2, score]); null = the file's header row names them",
    )
    hub_config: str | None = key(None, "hub dataset: configuration name")
    hub_data_files: str | None = key(
        None, "hub dataset: a file inside the repository, e.g. nli_for_simcse.csv"
    )
    hub_split: str = key("train", "hub dataset (or a save_to_disk folder of several splits): split")

    def negative_columns(self) -> list[str]:
        """The hard-negative columns, in order: `hard_negative_columns`, else the one column, else none."""
        if self.hard_negative_columns is not None:
            return list(self.hard_negative_columns)
        return [self.hard_negative_column] if self.hard_negative_column is not None else []


@dataclass
class ObjectiveConfig:
    """SimCSE's contrastive objective (InfoNCE with in-batch negatives, cosine / temperature), scored
    pairs (sentence-transformers' CoSENT, AnglE or cosine losses: lwap.train.scored_losses), and the
    elastic embeddings (lwap.train.elastic, docs/TRAINING.md "Elastic embeddings")."""

    name: str = key(REQUIRED, "the objective", choices=OBJECTIVES, example="unsup_simcse")
    temperature: float = key(
        0.05, "τ: logits are cosine / τ (scored_pairs cosent and angle: their scale, 1/τ = 20 by default)"
    )
    hard_negative_weight: float = key(
        1.0, "SimCSE's α: log α is added to each hard-negative logit (sup_simcse only)"
    )
    scored_loss: str = key(
        "cosent",
        "scored_pairs: sentence-transformers' CoSENTLoss (cosent), AnglELoss (angle) or "
        "CosineSimilarityLoss (cosine: MSE between cosine and score)",
        choices=SCORED_LOSSES,
    )
    matryoshka_dims: list[int] | None = key(
        None, "e.g. [384, 192, 96]: the loss also on the first d dimensions of each vector, renormalised"
    )
    matryoshka_weights: list[float] | None = key(
        None, "one weight per matryoshka_dims entry; null = 1 each"
    )
    depths: list[int] | None = key(
        None,
        "e.g. [2, 4, 6]: the loss also at these backbone depths k, the pooler reading levels 0..k; must "
        "include the backbone's L",
    )
    depth_weights: list[float] | None = key(None, "one weight per depths entry; null = 1 each")
    depth_sample: int | None = key(
        None,
        "n: each step trains L and n of the other depths, drawn (weights scaled to the same mean); "
        "null = all",
    )


@dataclass
class TrainingConfig:
    """Optimisation; batch size is per process (the global batch is this × number of processes)."""

    epochs: float = key(1.0, "passes over the data")
    max_steps: int = key(-1, "> 0 overrides epochs")
    per_device_batch_size: int = key(
        64, "per process: the global batch is this × the number of processes"
    )
    learning_rate: float = key(3e-5, "the backbone's (and, times head_learning_rate_multiplier, the head's)")
    weight_decay: float = key(0.0, "AdamW weight decay")
    warmup_ratio: float = key(0.0, "share of the steps with a linear learning-rate warm-up")
    lr_scheduler: str = key("linear", "the learning-rate schedule", choices=LR_SCHEDULERS)
    precision: str = key(
        "fp32", "fp32 | bf16 (autocast, on the CPU too) | fp16 (CUDA only, with a gradient scaler)",
        choices=PRECISIONS,
    )
    device: str = key(
        "auto", "auto (CUDA if available) | cpu | cuda; or lwap train --device; torchrun: one GPU a process",
        choices=DEVICES,
    )
    tf32: bool = key(
        True, "CUDA: TF32 tensor cores for fp32 matmuls (fp32 and bf16 runs); false = full fp32"
    )
    mini_batch_size: int | None = key(
        None, "GradCache: encode N sentences at a time, same loss and gradients, less memory"
    )
    seed: int = key(42, "the head's initialisation, data order and dropout: a seed repeats a run")
    drop_last: bool = key(True, "drop the last incomplete batch (required with more than one process)")
    batch_sampler: str = key(
        "random", "random (SimCSE) | no_duplicates | length_grouped (less padding, faster)",
        choices=BATCH_SAMPLERS,
    )
    attention: str = key(
        "sdpa", "the backbone's attention in training: sdpa | eager (CPU only)", choices=ATTENTIONS
    )
    fast_dropout: bool = key(False, "dropout masks from a cheaper random-number path, same rate and scaling")
    keep_freed_memory: bool = key(False, "glibc keeps freed memory: no page faults per step (CPU)")
    length_group_size: int = key(16, "batch_sampler length_grouped: batches per group sorted by token length")
    head_learning_rate_multiplier: float = key(
        1.0, "the pooling head's learning rate = learning_rate × this (poolers with parameters)"
    )
    head_warmup_steps: int = key(0, "the backbone is frozen for the first N steps (only the head trains)")
    dataloader_workers: int = key(
        0,
        "worker processes that tokenize batches ahead of the device, kept alive across epochs; 0 tokenizes "
        "in the training process (on a small CPU the workers take cores from training)",
    )
    logging_steps: int = key(10, "log the loss every N steps (metrics.csv, TensorBoard)")
    report_to: str | list[str] = key(
        "tensorboard",
        "where the trainer logs besides metrics.csv: tensorboard (into OUT/tensorboard), wandb, mlflow, ... "
        "where installed, a list of them, or none",
    )
    progress_bar: bool = key(
        True, "progress bars while training; false: none, datasets' included (data files are read without)"
    )


@dataclass
class EvalConfig:
    """Model selection on a dev set: STS-B dev (cosine Spearman, as SimCSE) or the user's own (dev_sets)."""

    dev: str | None = key(
        "stsb",
        "the dev set evaluated during training, whose best step is kept: stsb (STS-B dev, cosine Spearman, "
        "as SimCSE), a scored pairs file or a BEIR folder; null = none",
    )
    dev_metric: str | None = key(
        None,
        "the metric that selects; null = the dev set's main one (spearman; a BEIR folder: ndcg@10)",
        choices=PAIRS_METRICS + SEARCH_DEV_METRICS,
    )
    dev_columns: list[str] = key(
        list(DEV_COLUMNS), "a scored pairs dev file's columns: two texts and a score"
    )
    dev_column_names: list[str] | None = key(
        None,
        "a scored pairs dev file without a header row: its columns' names, in order (the first line is then "
        "data); null = the file's header row names them",
    )
    max_seq_length: int | None = key(
        None, "tokens the dev set is encoded at; null = the length the saved model reads"
    )
    precision: str = key("fp32", "the dev evaluations' precision", choices=EVAL_PRECISIONS)
    eval_steps: int = key(250, "evaluate every N steps")
    before_training: bool = key(True, "evaluate once at step 0 (the untrained model)")
    keep_best: bool = key(True, "the final model is the best checkpoint on the dev set, not the last")
    start_competes: bool = key(
        True,
        "with keep_best, the untrained model (step 0) can be the one kept; false: the best trained step "
        "(SimCSE's selection)",
    )
    batch_size: int = key(128, "sentences per batch when evaluating")


@dataclass
class TrainConfig:
    output: OutputConfig
    model: ModelConfig
    data: DataConfig
    objective: ObjectiveConfig
    training: TrainingConfig = dataclasses.field(default_factory=TrainingConfig)
    eval: EvalConfig = dataclasses.field(default_factory=EvalConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


SECTIONS: dict[str, type] = {
    "output": OutputConfig,
    "model": ModelConfig,
    "data": DataConfig,
    "objective": ObjectiveConfig,
    "training": TrainingConfig,
    "eval": EvalConfig,
}


def all_keys() -> list[str]:
    """Every dotted key a config may set, e.g. 'training.learning_rate'."""
    return [f"{section}.{f.name}" for section, cls in SECTIONS.items() for f in dataclasses.fields(cls)]


def default_of(f: dataclasses.Field) -> Any:
    """The value a config that leaves the key out gets (REQUIRED for a required key)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return REQUIRED
