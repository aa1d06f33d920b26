"""The rows of a comparison grid: every pooler of lwap's registry (lwap/registry.py) is a row, and a rows
file adds rows of its own: a pooler with settings of its own (say `lwap` with
`model.lwap_output=attention`), each with its own cells and report row.

A rows file also says what a report reads off the rows: the rows a grid plans (what `run` runs by default
and the report counts as the grid), its seeds, the legend's groups of added rows, the rows whose layer
attention is drawn, and the untouched rows a plain encoder is evaluated with. `lwap compare` reads the
shipped configs/compare/rows/default.yaml; `--rows FILE` (or the name of a shipped one) adds a file's rows
and replaces the default's other keys with its own:

    planned: [lwap, mean, my-lwap]                   # default: every row
    seeds: [0, 1, 2]
    untouched: {mean: mean, cls: "[CLS]"}            # pooling: its label; `mean` always
    regime_values: {warmup: {unsup: 50, sup: 33}}    # `{warmup}` in a row's settings, per regime
    rows:                                            # in the order the tables list them
      my-lwap: {pooling: lwap, set: [model.lwap_output=attention, "training.head_warmup_steps={warmup}"]}
    groups:                                          # the legend under each table
      - {name: mine, title: LWAP with its output read from the attention alone, rows: [my-lwap]}
    figure: [lwap, my-lwap]                          # default: every row that is `lwap`
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lwap.errors import ConfigError, unknown_value

KEYS = ("planned", "seeds", "untouched", "regime_values", "rows", "groups", "figure")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # a row names its cell files: ROW-seedN.json
PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Row:
    """One row: a registry pooler and the settings it adds to the grid's budget (`{name}` filled per
    regime from the file's `regime_values`)."""

    name: str
    pooling: str
    sets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Group:
    """Rows the report's legend lists together under one title."""

    name: str
    title: str
    rows: tuple[str, ...]


@dataclass(frozen=True)
class Rows:
    """Every row of a grid, in the order its tables list them, and what the report reads off them."""

    rows: Mapping[str, Row]
    planned: tuple[str, ...]
    seeds: tuple[int, ...]
    untouched: Mapping[str, str]  # pooling -> its label (`mean` first: the backbone's own pooling)
    groups: tuple[Group, ...] = ()
    figure: tuple[str, ...] = ()
    regime_values: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(self.rows)

    def pooling_of(self, row: str) -> str:
        """The registry pooler a row trains (a row no file defines: its own name, as a cell records it)."""
        return self.rows[row].pooling if row in self.rows else row

    def overrides(self, row: str, regime: str) -> list[str]:
        """The settings `row` adds to the budget in `regime`, its placeholders filled."""
        values = {name: str(by_regime[regime]) for name, by_regime in self.regime_values.items()}
        sets = self.rows[row].sets if row in self.rows else ()
        return [PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), s) for s in sets]

    def group(self, name: str) -> Group:
        return next(g for g in self.groups if g.name == name)

    def legend_groups(self) -> tuple[Group, ...]:
        """The file's groups, then the rows with settings that no group lists (so every added row is
        explained under its table)."""
        grouped = {row for g in self.groups for row in g.rows}
        rest = tuple(r.name for r in self.rows.values() if r.sets and r.name not in grouped)
        return self.groups + ((Group("other", "Rows with settings of their own", rest),) if rest else ())


def rows_folder() -> Path:
    """Where the shipped rows files are (configs/compare/rows/, installed in lwap.configs)."""
    from lwap.config_files import ROWS_FOLDER, shipped_folder

    return shipped_folder() / ROWS_FOLDER


def resolve_rows(value: str) -> Path:
    """The rows file `value` names: an existing path, else a shipped rows file by name (`study`)."""
    path = Path(value).expanduser()
    if path.exists():
        return path
    name = Path(value).name.removesuffix(".yaml")
    shipped = rows_folder() / f"{name}.yaml"
    if shipped.is_file():
        return shipped
    names = ", ".join(sorted(p.stem for p in rows_folder().glob("*.yaml")))
    raise ConfigError(f"--rows {value}: no such file, nor a shipped rows file of that name ({names})")


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of names, got {value!r}")
    return tuple(value)


def _known(names: tuple[str, ...], rows: Mapping[str, Row], where: str) -> tuple[str, ...]:
    for name in names:
        if name not in rows:
            raise unknown_value(where, name, tuple(rows))
    return names


def _row(name: Any, spec: Any, where: str, regime_values: Mapping[str, Any]) -> Row:
    from lwap.registry import POOLINGS

    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ConfigError(f"{where}: row name {name!r}: expected letters, digits, '-', '_' or '.'")
    spec = {} if spec is None else spec
    if not isinstance(spec, dict) or set(spec) - {"pooling", "set"}:
        raise ConfigError(f"{where}.{name}: expected a mapping of `pooling` and `set`, got {spec!r}")
    pooling = spec.get("pooling", name)
    if pooling not in POOLINGS:
        raise unknown_value(f"{where}.{name}.pooling", pooling, POOLINGS)
    sets = _strings(spec.get("set", []), f"{where}.{name}.set")
    if name in POOLINGS and (pooling != name or sets):
        raise ConfigError(f"{where}.{name}: a registry pooler; a row with settings needs a name of its own")
    for setting in sets:
        if "=" not in setting:
            raise ConfigError(f"{where}.{name}.set: {setting!r}: expected KEY=VALUE")
        missing = [m for m in PLACEHOLDER.findall(setting) if m not in regime_values]
        if missing:
            raise ConfigError(f"{where}.{name}.set: {{{missing[0]}}} is not one of regime_values")
    return Row(name, pooling, sets)


def _regime_values(value: Any, where: str) -> dict[str, dict[str, Any]]:
    from lwap.compare.grid import REGIMES

    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping of names to {{regime: value}}, got {value!r}")
    for name, by_regime in value.items():
        if not isinstance(by_regime, dict) or set(by_regime) != set(REGIMES):
            raise ConfigError(f"{where}.{name}: expected a value for each regime ({', '.join(REGIMES)})")
    return value


def parse_rows(raw: Any, label: str) -> Rows:
    """The rows a file's content gives (the default file's keys where it has none); ConfigError naming
    the file and the key that is wrong."""
    from lwap.registry import POOLINGS

    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{label}: expected a mapping with keys {', '.join(KEYS)}")
    unknown = [key for key in raw if key not in KEYS]
    if unknown:
        raise unknown_value(f"{label}: key", unknown[0], KEYS)
    values = _regime_values(raw.get("regime_values", {}), f"{label}: regime_values")
    spec = raw.get("rows") or {}
    if not isinstance(spec, dict):
        raise ConfigError(f"{label}: rows: expected a mapping of row names, got {spec!r}")
    listed = [_row(name, value, f"{label}: rows", values) for name, value in spec.items()]
    rows = {row.name: row for row in listed}
    rows |= {name: Row(name, name) for name in POOLINGS if name not in rows}
    seeds = raw.get("seeds", [0, 1, 2])
    if not isinstance(seeds, list) or not seeds or not all(type(s) is int and s >= 0 for s in seeds):
        raise ConfigError(f"{label}: seeds: expected a list of seeds (integers ≥ 0), got {seeds!r}")
    untouched = raw.get("untouched", {"mean": "mean"})
    if not isinstance(untouched, dict) or next(iter(untouched), None) != "mean":
        raise ConfigError(f"{label}: untouched: expected a mapping of poolings to labels, `mean` first")
    for pooling in untouched:
        if pooling not in POOLINGS:
            raise unknown_value(f"{label}: untouched", pooling, POOLINGS)
    groups = []
    for i, group in enumerate(raw.get("groups") or []):
        if not isinstance(group, dict) or set(group) != {"name", "title", "rows"}:
            raise ConfigError(f"{label}: groups[{i}]: expected a mapping of `name`, `title` and `rows`")
        names = _known(_strings(group["rows"], f"{label}: groups[{i}].rows"), rows, f"{label}: groups[{i}]")
        groups.append(Group(str(group["name"]), str(group["title"]), names))
    planned = _strings(raw.get("planned", list(rows)), f"{label}: planned")
    default_figure = [name for name, row in rows.items() if row.pooling == "lwap"]
    figure = _strings(raw.get("figure", default_figure), f"{label}: figure")
    return Rows(
        rows,
        _known(planned, rows, f"{label}: planned"),
        tuple(seeds),
        dict(untouched),
        tuple(groups),
        _known(figure, rows, f"{label}: figure"),
        values,
    )


@functools.cache
def _default_file() -> dict[str, Any]:
    from lwap.checks.files import read_yaml

    return read_yaml(rows_folder() / "default.yaml") or {}


def load_rows(path: str | Path | None = None) -> Rows:
    """The default rows (the registry's poolers, the shipped default file) with the file at `path`
    (`resolve_rows`: a path or a shipped name) added; its keys replace the default file's."""
    from lwap.checks.files import read_yaml

    raw = dict(_default_file())
    label = str(rows_folder() / "default.yaml")
    if path is not None:
        resolved = resolve_rows(str(path))
        own = read_yaml(resolved)
        if own is not None and not isinstance(own, dict):
            raise ConfigError(f"{resolved}: expected a mapping with keys {', '.join(KEYS)}")
        raw |= own or {}
        label = str(resolved)
    return parse_rows(raw, label)
