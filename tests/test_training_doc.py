"""docs/TRAINING.md's table of every config key agrees with the code: the same keys, the same defaults."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import yaml
from conftest import REPO

from lwap.train.config import _SECTIONS, all_keys

ROW = re.compile(r"^\| `([a-z_]+\.[a-z0-9_]+)` \| (required|`[^`]*`) \|", re.MULTILINE)
REQUIRED = object()


def code_defaults() -> dict[str, Any]:
    """`section.key` -> the default a config that leaves the key out gets (REQUIRED: none)."""
    defaults: dict[str, Any] = {}
    for section, cls in _SECTIONS.items():
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                value = f.default
            elif f.default_factory is not dataclasses.MISSING:
                value = f.default_factory()
            else:
                value = REQUIRED
            defaults[f"{section}.{f.name}"] = value
    return defaults


def test_every_key_is_in_the_table_with_its_default() -> None:
    rows = dict(ROW.findall((REPO / "docs" / "TRAINING.md").read_text(encoding="utf-8")))
    assert list(rows) == all_keys(), "docs/TRAINING.md 'Every key': add, remove or reorder rows"
    for key, default in code_defaults().items():
        cell = rows[key]
        if default is REQUIRED:
            assert cell == "required", key
            continue
        written = yaml.safe_load(cell.strip("`"))
        if isinstance(default, float):  # YAML reads 3e-5 as a string; configs are read the same way
            written = float(written)
        assert written == default and type(written) is type(default), f"{key}: table {cell}, code {default!r}"
