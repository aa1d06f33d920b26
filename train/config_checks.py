"""The values a loaded config may hold: every check that needs the config alone, each naming its key.

Types are checked while loading (`lwap.train.config`); here the values: choices (from the schema's
`choices`), ranges, and keys that contradict each other. The model section is the registry's to check
(`lwap.registry.check`: the pooler and its options), the elastic keys `lwap.train.elastic_config`'s.
What needs more than the config (the backbone's depth, a CUDA device, an installed integration) is
checked when the run is assembled, still before the output folder is touched.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from lwap import registry
from lwap.backbones import check_dropout
from lwap.checks.files import name_too_long
from lwap.checks.table_files import column_names_problem
from lwap.errors import ConfigError, unknown_value
from lwap.paths import expand_path
from lwap.train.config_schema import SECTIONS, SEED_MAX, TrainConfig
from lwap.train.elastic_config import check_objective


def check_values(c: TrainConfig, source: str) -> None:
    """Impossible or contradictory values, each reported with its key (ConfigError naming `source`)."""

    def need(ok: bool, key: str, what: str, value: Any) -> None:
        if not ok:
            raise ConfigError(f"{source}: {key} must be {what}, got {value!r}")

    _check_choices(c, source)
    need(bool(c.output.dir.strip()), "output.dir", "a non-empty path", c.output.dir)
    too_long = name_too_long(expand_path(c.output.dir))
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
        check_dropout(c.model.dropout)
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

    need(bool(c.data.train.strip()), "data.train", "a file path or a hub dataset id", c.data.train)
    if c.data.max_examples is not None:
        need(c.data.max_examples >= 1, "data.max_examples", "at least 1 or null", c.data.max_examples)
    _check_columns(c, source)

    need(c.objective.temperature > 0, "objective.temperature", "> 0", c.objective.temperature)
    need(
        c.objective.hard_negative_weight > 0,
        "objective.hard_negative_weight",
        "> 0 (SimCSE's α)",
        c.objective.hard_negative_weight,
    )
    check_objective(c.objective, c.model, source)
    _check_scored_pairs(c, source)
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
    if t.mini_batch_size is not None:
        need(t.mini_batch_size >= 1, "training.mini_batch_size", "at least 1 or null", t.mini_batch_size)
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
    need(
        len(e.dev_columns) == 3 and all(name.strip() for name in e.dev_columns),
        "eval.dev_columns",
        "three column names: sentence 1, sentence 2, score",
        e.dev_columns,
    )
    _check_column_names(e.dev_column_names, "eval.dev_column_names", source)
    if e.max_seq_length is not None:
        need(e.max_seq_length >= 2, "eval.max_seq_length", "at least 2 or null", e.max_seq_length)
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


def _check_choices(c: TrainConfig, source: str) -> None:
    """Every key with `choices` in the schema holds one of them (or null where its type allows it)."""
    for section, cls in SECTIONS.items():
        if section == "model":  # the pooler and its options: registry.check, in check_values
            continue
        values = getattr(c, section)
        for f in dataclasses.fields(cls):
            value = getattr(values, f.name)
            choices = f.metadata["choices"]
            if choices and value is not None and value not in choices:
                raise unknown_value(f"{source}: {section}.{f.name}", value, choices)


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
    _check_column_names(d.column_names, "data.column_names", source)
    if c.objective.name == "scored_pairs":  # data.scored_columns: _check_scored_pairs
        return
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


def _check_column_names(names: list[str] | None, key: str, source: str) -> None:
    """A headerless table's column names: null, or names (none empty, none twice) in the file's order."""
    problem = column_names_problem(names)
    if problem is not None:
        raise ConfigError(f"{source}: {key} {problem} (null: the file has a header row), got {names!r}")


def _check_scored_pairs(c: TrainConfig, source: str) -> None:
    """scored_pairs' keys, and what it does not combine with; its keys set for another objective."""
    o, d = c.objective, c.data
    if o.name != "scored_pairs":
        for key, value, default in (
            ("objective.scored_loss", o.scored_loss, "cosent"),
            ("data.score_range", d.score_range, None),
        ):
            if value != default:
                raise ConfigError(f"{source}: {key} applies to objective scored_pairs only, got {value!r}")
        return
    if len(d.scored_columns) != 3 or not all(name.strip() for name in d.scored_columns):
        raise ConfigError(
            f"{source}: data.scored_columns must be three column names (text 1, text 2, score), got "
            f"{d.scored_columns!r}"
        )
    if len(set(d.scored_columns)) != 3:
        raise ConfigError(f"{source}: data.scored_columns names a column twice: {d.scored_columns!r}")
    bounds = d.score_range
    if bounds is not None and not (
        len(bounds) == 2 and all(map(math.isfinite, bounds)) and bounds[0] < bounds[1]
    ):
        raise ConfigError(
            f"{source}: data.score_range must be [low, high] with low < high (e.g. [0, 5]) or null, got "
            f"{d.score_range!r}"
        )
    # the losses are sentence-transformers' own: none of SimCSE's extras applies to them
    unsupported = [
        ("objective.hard_negative_weight", o.hard_negative_weight != 1.0, "a SimCSE hard-negative weight"),
        ("training.mini_batch_size", c.training.mini_batch_size is not None, "GradCache of SimCSE's loss"),
        ("objective.matryoshka_dims", o.matryoshka_dims is not None, "elastic embeddings (SimCSE's loss)"),
        ("objective.depths", o.depths is not None, "elastic embeddings (SimCSE's loss)"),
        ("objective.temperature", o.scored_loss == "cosine" and o.temperature != 0.05, "a scale (cosine)"),
    ]
    for key, is_set, what in unsupported:
        if is_set:
            raise ConfigError(
                f"{source}: {key} is {what}; objective scored_pairs with scored_loss {o.scored_loss} has "
                "none: leave it at its default"
            )


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


def unused_pooler_options(c: TrainConfig, given: dict[str, Any]) -> list[str]:
    """Notes for options of another pooler than `model.pooling` that `given` (the config's model section)
    sets to other than their default: they load (a grid passes one option to every row) but do nothing."""
    own = {option.name for option in registry.POOLERS[c.model.pooling].options}
    notes = []
    for owner in registry.POOLERS.values():
        for option in owner.options:
            value = getattr(c.model, option.name)
            if option.name in given and option.name not in own and value != option.default:
                notes.append(
                    f"model.{option.name} is an option of pooling {owner.name}; pooling {c.model.pooling} "
                    "does not read it"
                )
    return notes
