"""The training config: one YAML file per experiment, loaded into typed dataclasses and checked.

Every setting lives in a dataclass field below, so a config file can show all of them (the files in
`configs/` do, and a test keeps it so). Loading rejects, with the file and the dotted key in the message:
unknown keys (with close matches), wrong types, and impossible values. `--set key=value` overrides
use the same checks (the value is parsed as YAML, so `--set training.precision=bf16` and
`--set training.learning_rate=1e-4` both work).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lwap import registry
from lwap.checks.files import read_yaml
from lwap.checks.safe_yaml import AliasError, parse_yaml
from lwap.errors import ConfigError, DataError, unknown_value

OBJECTIVES = ("unsup_simcse", "sup_simcse")
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


@dataclass
class OutputConfig:
    """Where the run writes, and how often it checkpoints."""

    dir: str
    overwrite: bool = False  # replace a finished model already in `dir` (else OutputExistsError)
    save_steps: int = 250  # checkpoint every N optimizer steps (a multiple of eval.eval_steps if keep_best)
    save_total_limit: int | None = 2  # checkpoints kept on disk (the best one is always kept); null = all


def _with_pooler_options(cls: type) -> type:
    """A field per option in lwap.registry (lwap_layers, score_scale, ...): new options need no edit here."""
    for option in registry.OPTIONS.values():
        cls.__annotations__[option.name] = option.type
        setattr(cls, option.name, field(default_factory=lambda d=option.default: copy.deepcopy(d)))
    return cls


@dataclass
@_with_pooler_options
class ModelConfig:
    """Backbone and pooler, as `lwap.build_model` takes them; the pooler options follow these fields."""

    backbone: str  # hub id or local folder
    pooling: str  # one of lwap.POOLINGS (lwap.registry)
    max_seq_length: int = 32
    dropout: float | None = None  # backbone dropout in training (SimCSE's noise), hidden and attention
    trust_remote_code: bool = (
        False  # let a backbone folder run code of its own (auto_map): an explicit opt-in
    )

    def pooler_options(self) -> dict[str, Any]:
        """Every pooler option's value (build_model uses the chosen pooler's own)."""
        return {name: getattr(self, name) for name in registry.OPTIONS}


@dataclass
class DataConfig:
    """Training data: a file (.txt, .csv, .tsv, .jsonl, .json, .parquet; lwap.train.data), a `datasets`
    save_to_disk folder, or a hub id; columns by name in every format but plain text."""

    train: str  # path (may use $LWAP_DATA_DIR), a save_to_disk folder or a Hugging Face dataset id
    max_examples: int | None = None  # use only the first N examples (lines/rows); null = all
    text_column: str = "text"  # unsup_simcse from a table (not .txt): the sentence column
    anchor_column: str = "sent0"  # sup_simcse: premise
    positive_column: str = "sent1"  # sup_simcse: entailment hypothesis
    hard_negative_column: str | None = "hard_neg"  # sup_simcse: contradiction; null = pairs only
    hard_negative_columns: list[str] | None = None  # sup_simcse: several (hard_negative_column: null)
    hub_config: str | None = None  # hub dataset: configuration name
    hub_data_files: str | None = None  # hub dataset: a file inside the repository, e.g. nli_for_simcse.csv
    hub_split: str = "train"  # hub dataset (or a save_to_disk DatasetDict folder): split

    def negative_columns(self) -> list[str]:
        """The hard-negative columns, in order: `hard_negative_columns`, else the one column, else none."""
        if self.hard_negative_columns is not None:
            return list(self.hard_negative_columns)
        return [self.hard_negative_column] if self.hard_negative_column is not None else []


@dataclass
class ObjectiveConfig:
    """SimCSE's contrastive objective (InfoNCE with in-batch negatives, cosine / temperature)."""

    name: str  # unsup_simcse | sup_simcse
    temperature: float = 0.05
    hard_negative_weight: float = 1.0  # SimCSE's α: log α is added to each hard-negative logit (sup only)
    # elastic embeddings (lwap.train.elastic, docs/TRAINING.md "Elastic embeddings"):
    matryoshka_dims: list[int] | None = None  # the loss also on the first d dimensions, renormalised
    matryoshka_weights: list[float] | None = None  # one per matryoshka_dims entry; null = equal (1 each)
    depths: list[int] | None = None  # the loss also at these backbone depths k (levels 0..k); must hold L
    depth_weights: list[float] | None = None  # one per depths entry; null = equal (1 each)
    depth_sample: int | None = None  # n: each step L and n other depths drawn (weighted to the same mean)


@dataclass
class TrainingConfig:
    """Optimisation; batch size is per process (the global batch is this × number of processes)."""

    epochs: float = 1.0
    max_steps: int = -1  # > 0 overrides epochs
    per_device_batch_size: int = 64
    learning_rate: float = 3e-5
    weight_decay: float = 0.0
    warmup_ratio: float = 0.0
    lr_scheduler: str = "linear"
    precision: str = "fp32"  # fp32 | bf16 (autocast; on the CPU too) | fp16 (CUDA only, with a grad scaler)
    device: str = "auto"  # auto (CUDA if available, else CPU) | cpu | cuda (torchrun: one GPU per process)
    tf32: bool = True  # CUDA: TF32 tensor cores for fp32 matmuls (fp32 and bf16 runs); false = full fp32
    mini_batch_size: int | None = None  # GradCache: encode N at a time, same gradients (cached_loss.py)
    seed: int = 42
    drop_last: bool = True  # drop the last incomplete batch (required with more than one process)
    batch_sampler: str = "random"  # random (SimCSE) | no_duplicates | length_grouped (less padding, faster)
    attention: str = "sdpa"  # backbone attention in training: sdpa | eager (fast_dropout.py)
    fast_dropout: bool = False  # cheaper dropout masks, same rate and scaling (fast_dropout.py)
    keep_freed_memory: bool = False  # glibc malloc keeps freed memory: no page faults per step (allocator.py)
    length_group_size: int = 16  # length_grouped: batches per group sorted by token length (sampling.py)
    head_learning_rate_multiplier: float = 1.0  # the pooling head's lr = learning_rate × this (new heads)
    head_warmup_steps: int = 0  # the backbone is frozen for the first N steps (only the head trains)
    dataloader_workers: int = 0  # processes tokenizing batches ahead of the device; 0 = the training process
    logging_steps: int = 10
    report_to: str | list[str] = "tensorboard"  # tensorboard | wandb | mlflow | ... | none | a list of them
    progress_bar: bool = True


@dataclass
class EvalConfig:
    """Model selection on a dev set: STS-B dev (cosine Spearman, as SimCSE) or the user's own (dev_sets)."""

    dev: str | None = "stsb"  # stsb | a scored pairs file | a BEIR folder | null (no evaluation in training)
    dev_metric: str | None = None  # null = the dev set's main metric: spearman (pairs), ndcg@10 (BEIR)
    dev_columns: list[str] = field(default_factory=lambda: list(DEV_COLUMNS))  # pairs file: s1, s2, score
    max_seq_length: int | None = None  # tokens the dev set is encoded at; null = the model's inference length
    precision: str = "fp32"  # the dev evaluations' precision: fp32 | bf16 (autocast)
    eval_steps: int = 250
    before_training: bool = True  # evaluate once at step 0 (the untrained model)
    keep_best: bool = True  # the final model is the best checkpoint on STS-B dev, not the last
    start_competes: bool = True  # with keep_best, the untrained model (step 0) can be the one kept
    batch_size: int = 128


@dataclass
class TrainConfig:
    output: OutputConfig
    model: ModelConfig
    data: DataConfig
    objective: ObjectiveConfig
    training: TrainingConfig = field(default_factory=TrainingConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_SECTIONS: dict[str, type] = {
    "output": OutputConfig,
    "model": ModelConfig,
    "data": DataConfig,
    "objective": ObjectiveConfig,
    "training": TrainingConfig,
    "eval": EvalConfig,
}


def all_keys() -> list[str]:
    """Every dotted key a config may set, e.g. 'training.learning_rate'."""
    return [f"{section}.{f.name}" for section, cls in _SECTIONS.items() for f in dataclasses.fields(cls)]


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """Read `path` (YAML, safe loader), apply `key=value` overrides, check all; ConfigError on a fault."""
    path = Path(path)
    source = str(path)
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{source}: no such config file")
    if path.is_dir():
        raise ConfigError(f"{source}: is a directory")
    try:
        raw = read_yaml(path, source)  # names the file and line of a fault, as every file lwap reads
    except DataError as error:
        raise ConfigError(str(error)) from None
    if raw is None:
        raise ConfigError(f"{source}: config file is empty")
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{source}: expected a mapping of sections at the top level, got {type(raw).__name__}"
        )
    for override in overrides:
        _apply_override(raw, override, source)
    return config_from_dict(raw, source)


def _apply_override(raw: dict[str, Any], override: str, source: str) -> None:
    key, sep, text = override.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {override!r}: expected KEY=VALUE, e.g. training.learning_rate=1e-4")
    parts = key.split(".")
    if len(parts) != 2:
        raise ConfigError(f"--set {key}: {_unknown_key_message(key)}")
    try:  # the same loader as config files: an alias bomb in a value fails here, in bounded memory
        value = parse_yaml(text, f"--set {key}") if text.strip() else None
    except AliasError as error:
        raise ConfigError(str(error)) from None
    except DataError:  # not YAML: the text itself (a path with a colon, say)
        value = text
    section = raw.setdefault(parts[0], {})
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: section '{parts[0]}' must be a mapping, got {type(section).__name__}")
    section[parts[1]] = value


def config_from_dict(raw: dict[str, Any], source: str = "<config>") -> TrainConfig:
    """Build and check a TrainConfig from nested dicts (as YAML gives them)."""
    unknown = [k for k in raw if k not in _SECTIONS]
    if unknown:
        raise ConfigError(f"{source}: {_unknown_key_message(str(unknown[0]))}")
    raw = _migrate(raw, source)
    sections: dict[str, Any] = {}
    for name, cls in _SECTIONS.items():
        values = raw.get(name)
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: section '{name}' must be a mapping, got {type(values).__name__}")
        sections[name] = _build_section(name, cls, values, source)
    config = TrainConfig(**sections)
    data = raw.get("data") or {}
    if config.data.hard_negative_columns is not None and "hard_negative_column" not in data:
        config.data.hard_negative_column = None  # its default ("hard_neg") gives way to the list
    _check_values(config, source)
    return config


def _migrate(raw: dict[str, Any], source: str) -> dict[str, Any]:
    """Keys of earlier versions, rewritten: `eval.stsb_dev: true|false` (before `eval.dev`) is `eval.dev:
    stsb` (or the dev set given beside it) or `eval.dev: null`, so old configs, `--set eval.stsb_dev=false`
    and the config.yaml of finished runs (`lwap card`) still load."""
    section = raw.get("eval")
    if not isinstance(section, dict) or "stsb_dev" not in section:
        return raw
    section = dict(section)
    value = section.pop("stsb_dev")
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: eval.stsb_dev must be true or false, got {_describe(value)}")
    if not value:
        if section.get("dev", "stsb") not in (None, "stsb"):
            raise ConfigError(
                f"{source}: eval.stsb_dev: false (no dev evaluation) contradicts eval.dev: "
                f"{section['dev']!r}; eval.stsb_dev is replaced by eval.dev (null = no dev evaluation): "
                "give only eval.dev"
            )
        section["dev"] = None
    elif "dev" in section and section["dev"] is None:
        raise ConfigError(
            f"{source}: eval.stsb_dev: true contradicts eval.dev: null; eval.stsb_dev is replaced by "
            "eval.dev: give only eval.dev"
        )
    return {**raw, "eval": section}


def _build_section(name: str, cls: type, values: dict[str, Any], source: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key in values:
        if key not in fields:
            raise ConfigError(f"{source}: {_unknown_key_message(f'{name}.{key}')}")
    kwargs = {}
    for key, f in fields.items():
        if key in values:
            kwargs[key] = _coerce(values[key], hints[key], f"{name}.{key}", source)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{source}: missing required key '{name}.{key}'")
    return cls(**kwargs)


def _unknown_key_message(key: str) -> str:
    """'unknown key X; did you mean ...' with close matches by dotted key and by leaf name in any section."""
    keys = all_keys()
    leaf = key.rsplit(".", 1)[-1]
    close = difflib.get_close_matches(key, keys + list(_SECTIONS), n=3, cutoff=0.6)
    close += [k for k in keys if difflib.SequenceMatcher(None, leaf, k.rsplit(".", 1)[-1]).ratio() >= 0.8]
    close = list(dict.fromkeys(close))[:4]
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown key '{key}'{hint} (sections: {', '.join(_SECTIONS)})"


_FLOAT_TEXT = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def _coerce(value: Any, hint: Any, key: str, source: str) -> Any:
    """Check `value` against the field's type hint; the few safe conversions are int→float and '3e-5'→float.

    PyYAML follows YAML 1.1, where `3e-5` (no dot) is a string, while YAML 1.2 and every reader of a
    config file see a float; refusing it would be a trap, so float fields accept such strings.
    """
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        inner = [o for o in options if o is not type(None)]
        if len(inner) > 1:  # e.g. str | list[str]: a list takes the list option, anything else the other
            lists = [o for o in inner if typing.get_origin(o) is list]
            others = [o for o in inner if typing.get_origin(o) is not list]
            inner = lists if isinstance(value, list) and lists else others or lists
        return _coerce(value, inner[0], key, source)
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{source}: {key} must be a list of {item.__name__}, got {_describe(value)}")
        return [_coerce(v, item, f"{key}[{i}]", source) for i, v in enumerate(value)]
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{source}: {key} must be true or false, got {_describe(value)}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{source}: {key} must be an integer, got {_describe(value)}")
    if hint is float:
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if is_number or (isinstance(value, str) and _FLOAT_TEXT.match(value.strip())):
            number = float(value)
        else:
            raise ConfigError(f"{source}: {key} must be a number, got {_describe(value)}")
        if not math.isfinite(number):
            raise ConfigError(f"{source}: {key} must be finite, got {value!r}")
        return number
    if hint is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{source}: {key} must be a string, got {_describe(value)}")
    raise TypeError(f"unsupported config type {hint!r} for {key}")  # a bug in this module, not user input


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r}"


def _choice(value: str, valid: tuple[str, ...], key: str, source: str) -> None:
    if value not in valid:
        raise unknown_value(f"{source}: {key}", value, valid)


def _check_values(c: TrainConfig, source: str) -> None:
    """Impossible or contradictory values, each reported with its key."""

    def need(ok: bool, key: str, what: str, value: Any) -> None:
        if not ok:
            raise ConfigError(f"{source}: {key} must be {what}, got {value!r}")

    need(bool(c.output.dir.strip()), "output.dir", "a non-empty path", c.output.dir)
    from lwap.checks.files import name_too_long

    too_long = name_too_long(Path(c.output.dir).expanduser())
    if too_long:
        raise ConfigError(f"{source}: output.dir {too_long}")
    need(c.output.save_steps >= 1, "output.save_steps", "at least 1", c.output.save_steps)
    if c.output.save_total_limit is not None:
        need(
            c.output.save_total_limit >= 1,
            "output.save_total_limit",
            "at least 1 or null",
            c.output.save_total_limit,
        )

    try:
        registry.check(c.model.pooling, c.model.pooler_options(), key_prefix="model.")
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None
    need(
        0 <= c.training.seed <= SEED_MAX,
        "training.seed",
        f"between 0 and {SEED_MAX} (2**32 - 1, the largest seed numpy and torch's data order accept)",
        c.training.seed,
    )
    need(
        c.model.max_seq_length >= 2,
        "model.max_seq_length",
        "at least 2 (room for [CLS] and [SEP])",
        c.model.max_seq_length,
    )
    need(bool(c.model.backbone.strip()), "model.backbone", "a hub id or a folder", c.model.backbone)
    if c.model.dropout is not None:
        need(
            0 <= c.model.dropout < 1,
            "model.dropout",
            "in [0, 1) or null (the backbone's own)",
            c.model.dropout,
        )

    need(bool(c.data.train.strip()), "data.train", "a file path or a hub dataset id", c.data.train)
    if c.data.max_examples is not None:
        need(c.data.max_examples >= 1, "data.max_examples", "at least 1 or null", c.data.max_examples)
    _check_columns(c, source)

    _choice(c.objective.name, OBJECTIVES, "objective.name", source)
    need(c.objective.temperature > 0, "objective.temperature", "> 0", c.objective.temperature)
    need(
        c.objective.hard_negative_weight > 0,
        "objective.hard_negative_weight",
        "> 0 (SimCSE's α)",
        c.objective.hard_negative_weight,
    )
    from lwap.train.elastic_config import check_objective

    check_objective(c.objective, c.model, source)
    if c.objective.name == "unsup_simcse" and c.objective.hard_negative_weight != 1.0:
        raise ConfigError(
            f"{source}: objective.hard_negative_weight applies to sup_simcse only (unsup_simcse has no hard "
            f"negatives); leave it at 1.0, got {c.objective.hard_negative_weight}"
        )

    t = c.training
    need(t.learning_rate > 0, "training.learning_rate", "> 0", t.learning_rate)
    need(
        t.per_device_batch_size >= 1, "training.per_device_batch_size", "at least 1", t.per_device_batch_size
    )
    need(
        t.max_steps == -1 or t.max_steps >= 1,
        "training.max_steps",
        "-1 (use epochs) or at least 1",
        t.max_steps,
    )
    if t.max_steps == -1:
        need(t.epochs > 0, "training.epochs", "> 0 (or set training.max_steps)", t.epochs)
    need(t.weight_decay >= 0, "training.weight_decay", ">= 0", t.weight_decay)
    need(0 <= t.warmup_ratio < 1, "training.warmup_ratio", "in [0, 1)", t.warmup_ratio)
    need(t.logging_steps >= 1, "training.logging_steps", "at least 1", t.logging_steps)
    _choice(t.lr_scheduler, LR_SCHEDULERS, "training.lr_scheduler", source)
    _choice(t.precision, PRECISIONS, "training.precision", source)
    _choice(t.device, DEVICES, "training.device", source)
    if t.mini_batch_size is not None:
        need(t.mini_batch_size >= 1, "training.mini_batch_size", "at least 1 or null", t.mini_batch_size)
    _choice(t.batch_sampler, BATCH_SAMPLERS, "training.batch_sampler", source)
    _choice(t.attention, ATTENTIONS, "training.attention", source)
    need(t.length_group_size >= 1, "training.length_group_size", "at least 1", t.length_group_size)
    need(
        t.head_learning_rate_multiplier > 0,
        "training.head_learning_rate_multiplier",
        "> 0",
        t.head_learning_rate_multiplier,
    )
    need(t.head_warmup_steps >= 0, "training.head_warmup_steps", "at least 0", t.head_warmup_steps)
    need(t.dataloader_workers >= 0, "training.dataloader_workers", "at least 0", t.dataloader_workers)
    _check_report_to(t.report_to, source)

    e = c.eval
    need(e.eval_steps >= 1, "eval.eval_steps", "at least 1", e.eval_steps)
    need(e.batch_size >= 1, "eval.batch_size", "at least 1", e.batch_size)
    if e.dev is not None:
        need(bool(e.dev.strip()), "eval.dev", "stsb, a scored pairs file, a BEIR folder or null", e.dev)
    if e.dev_metric is not None:
        _choice(e.dev_metric, PAIRS_METRICS + SEARCH_DEV_METRICS, "eval.dev_metric", source)
    need(
        len(e.dev_columns) == 3 and all(name.strip() for name in e.dev_columns),
        "eval.dev_columns",
        "three column names: sentence 1, sentence 2, score",
        e.dev_columns,
    )
    if e.max_seq_length is not None:
        need(e.max_seq_length >= 2, "eval.max_seq_length", "at least 2 or null", e.max_seq_length)
    _choice(e.precision, EVAL_PRECISIONS, "eval.precision", source)
    if e.keep_best:
        if e.dev is None:
            raise ConfigError(
                f"{source}: eval.keep_best needs a dev set (eval.dev: stsb, a pairs file or a BEIR folder; "
                "nothing to select the best by)"
            )
        if c.output.save_steps % e.eval_steps:
            raise ConfigError(
                f"{source}: output.save_steps ({c.output.save_steps}) must be a multiple of eval.eval_steps "
                f"({e.eval_steps}) when eval.keep_best is true (only evaluated checkpoints can be the best)"
            )


def _check_columns(c: TrainConfig, source: str) -> None:
    """Column names: non-empty; one hard-negative key at a time; no column read twice (sup_simcse)."""
    d = c.data
    if d.hard_negative_columns is not None and d.hard_negative_column is not None:
        raise ConfigError(
            f"{source}: data.hard_negative_column ({d.hard_negative_column!r}) and "
            f"data.hard_negative_columns ({d.hard_negative_columns!r}) are both set; use one "
            "(data.hard_negative_column: null with the list)"
        )
    if d.hard_negative_columns is not None and not d.hard_negative_columns:
        raise ConfigError(
            f"{source}: data.hard_negative_columns must list at least one column, or be null (pairs only: "
            "both hard-negative keys null)"
        )
    named = {"data.text_column": d.text_column}
    if c.objective.name == "sup_simcse":
        named = {"data.anchor_column": d.anchor_column, "data.positive_column": d.positive_column}
        if d.hard_negative_columns is not None:
            named |= {f"data.hard_negative_columns[{i}]": n for i, n in enumerate(d.hard_negative_columns)}
        elif d.hard_negative_column is not None:
            named["data.hard_negative_column"] = d.hard_negative_column
    seen: dict[str, str] = {}
    for key, column in named.items():
        if not column.strip():
            raise ConfigError(f"{source}: {key} must be a column name, got {column!r}")
        if column in seen:
            raise ConfigError(
                f"{source}: {seen[column]} and {key} both name column {column!r}; each column is read once"
            )
        seen[column] = key


def _check_report_to(report_to: str | list[str], source: str) -> None:
    """The shape of training.report_to; whether each integration is installed is checked when the
    training arguments are built (lwap.train.reporting imports transformers, this module does not)."""
    names = [report_to] if isinstance(report_to, str) else report_to
    if not names or any(not name.strip() for name in names):
        raise ConfigError(
            f"{source}: training.report_to must be an integration name or a list of them (tensorboard, "
            f"wandb, mlflow, ...) or none, got {report_to!r}"
        )
    if "none" in names and len(names) > 1:
        raise ConfigError(f"{source}: training.report_to lists 'none' with others: {report_to!r}")
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: training.report_to names an integration twice: {report_to!r}")


def dump_config(config: TrainConfig) -> str:
    """The complete config as YAML (every key, defaults included): what the run actually used."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)
