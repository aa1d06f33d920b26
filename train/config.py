"""The training config: one YAML file per experiment, loaded into typed dataclasses and checked.

The keys, their types, defaults and descriptions are `lwap.train.config_schema`'s (re-exported here); a
config file lists only the keys it changes (`lwap train --show-config` prints every one, annotated).
Loading rejects, with the file and the dotted key in the message: unknown keys (with close matches),
wrong types, and impossible values (`lwap.train.config_checks`). `--set key=value` overrides use the
same checks (the value is parsed as YAML, so `--set training.precision=bf16` and
`--set training.learning_rate=1e-4` both work).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from lwap.checks.files import read_yaml
from lwap.checks.safe_yaml import AliasError, parse_yaml
from lwap.data_sources import note
from lwap.errors import ConfigError, DataError
from lwap.train.config_checks import check_values, unused_pooler_options
from lwap.train.config_schema import (
    SECTIONS,
    DataConfig,
    EvalConfig,
    ModelConfig,
    ObjectiveConfig,
    OutputConfig,
    TrainConfig,
    TrainingConfig,
    all_keys,
)

__all__ = [
    "RETIRED_KEYS",
    "DataConfig",
    "EvalConfig",
    "ModelConfig",
    "ObjectiveConfig",
    "OutputConfig",
    "TrainConfig",
    "TrainingConfig",
    "all_keys",
    "config_from_dict",
    "dump_config",
    "load_config",
]

# keys of earlier versions that still load: each is read as the key that replaced it (in the same section;
# _RETIRED_VALUES says how its value reads), with a one-line note naming that key
RETIRED_KEYS = {"eval.stsb_dev": "eval.dev"}


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """Read `path` (YAML, safe loader), apply `key=value` overrides, check all; ConfigError on a fault.
    What the user wrote that loads but deserves a word (a retired key, another pooler's option) gets a
    one-line note on stderr."""
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
    config, notes = _build(raw, source)
    for message in notes:
        note(f"{source}: {message}")
    return config


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
    """Build and check a TrainConfig from nested dicts (as YAML gives them), silently: a run's own
    config.yaml (`lwap card`) or a script's dict, not what a user wrote (`load_config` notes that)."""
    return _build(raw, source)[0]


def _build(raw: dict[str, Any], source: str) -> tuple[TrainConfig, list[str]]:
    """The checked config, and the notes on what loads but does nothing as written."""
    unknown = [k for k in raw if k not in SECTIONS]
    if unknown:
        raise ConfigError(f"{source}: {_unknown_key_message(str(unknown[0]))}")
    raw, notes = _read_retired_keys(raw, source)
    sections: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
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
    check_values(config, source)
    return config, notes + unused_pooler_options(config, raw.get("model") or {})


def _read_retired_keys(raw: dict[str, Any], source: str) -> tuple[dict[str, Any], list[str]]:
    """Each key of RETIRED_KEYS a config still writes, read as the key that replaced it (in its section),
    and a note naming that key: old configs, old `--set`s and the config.yaml of finished runs (`lwap
    card`) still load."""
    notes = []
    for old, new in RETIRED_KEYS.items():
        section_name, name = old.split(".")
        section = raw.get(section_name)
        if not isinstance(section, dict) or name not in section:
            continue
        section = dict(section)
        value = _RETIRED_VALUES[old](section.pop(name), section, source)
        section[new.split(".")[1]] = value
        notes.append(f"{old} is retired, read as {new}: {'null' if value is None else value} (write {new})")
        raw = {**raw, section_name: section}
    return raw, notes


def _stsb_dev(value: Any, section: dict[str, Any], source: str) -> Any:
    """`eval.stsb_dev: true|false` (before `eval.dev`): the dev set given (STS-B dev by default), or null."""
    dev = section.get("dev", "stsb")
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: eval.stsb_dev must be true or false, got {_describe(value)}")
    if (value and dev is None) or (not value and dev not in (None, "stsb")):
        given = "null" if dev is None else dev
        raise ConfigError(
            f"{source}: eval.stsb_dev: {str(value).lower()} contradicts eval.dev: {given}; eval.stsb_dev is "
            "replaced by eval.dev (null = no dev evaluation): give only eval.dev"
        )
    return dev if value else None


# how a retired key's value reads as its replacement's
_RETIRED_VALUES: dict[str, Callable[[Any, dict[str, Any], str], Any]] = {"eval.stsb_dev": _stsb_dev}


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
    close = difflib.get_close_matches(key, keys + list(SECTIONS), n=3, cutoff=0.6)
    close += [k for k in keys if difflib.SequenceMatcher(None, leaf, k.rsplit(".", 1)[-1]).ratio() >= 0.8]
    close = list(dict.fromkeys(close))[:4]
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown key '{key}'{hint} (sections: {', '.join(SECTIONS)})"


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


def dump_config(config: TrainConfig) -> str:
    """The complete config as YAML (every key, defaults included): what the run actually used."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)
