"""The annotated reference of a training config: every key, its default and what it does, as YAML.

Generated from the schema (`lwap.train.config_schema`, whose pooler options come from `lwap.registry`),
so it cannot fall behind it: `lwap train --show-config` prints it, docs/TRAINING.md ("Every key") holds
a copy that a test keeps equal. It loads as a config itself: the required keys show example values,
every other key its default. The pooler options are grouped by pooler; a config for one pooler needs
none of the others'.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from typing import Any

import yaml

from lwap import registry
from lwap.train.config import RETIRED_KEYS
from lwap.train.config_schema import REQUIRED, SECTIONS, default_of

WIDTH = 110
HEADER = """\
# Every key of an `lwap train` config, with its default and what it does (`lwap train --show-config`;
# generated from lwap.train.config_schema). A config lists only the keys it changes: the rest take the
# values below. The required keys have no default; the values shown for them are examples."""


def reference() -> str:
    """The reference YAML text (see the module docstring)."""
    parts = [HEADER]
    pooler_of = {o.name: p for p in registry.POOLERS.values() for o in p.options}
    for section, cls in SECTIONS.items():
        lines = [f"{section}:"]
        group = None
        for f in dataclasses.fields(cls):
            pooler = pooler_of.get(f.name) if section == "model" else None
            if pooler is not None and pooler is not group:
                group = pooler
                lines += ["", *_comment(f"pooling {pooler.name} only: {pooler.description}", "  # ")]
            lines += _key_lines(f)
        parts.append("\n".join(lines))
    retired = ", ".join(f"{old} (now {new})" for old, new in RETIRED_KEYS.items())
    parts.append(f"# Retired keys, still read with a note naming the key that replaced them: {retired}.")
    return "\n\n".join(parts) + "\n"


def _key_lines(f: dataclasses.Field) -> list[str]:
    value = default_of(f)
    what = f.metadata["what"]
    if value is REQUIRED:
        value, what = f.metadata["example"], f"required: {what}"
    choices = f.metadata["choices"]
    if choices and not all(re.search(rf"(?<![\w@]){re.escape(c)}(?![\w@])", what) for c in choices):
        what += f"; one of {' | '.join(choices)}"
    return [*_comment(what, "  # "), f"  {f.name}: {_yaml(value)}"]


def _comment(text: str, prefix: str) -> list[str]:
    return [prefix + line for line in textwrap.wrap(text, WIDTH - len(prefix), break_on_hyphens=False)]


def _yaml(value: Any) -> str:
    """One value as YAML reads it back: `null`, `3.0e-05`, `[sentence1, sentence2, score]`."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1000)
    return text.removesuffix("\n").removesuffix("\n...").strip()
