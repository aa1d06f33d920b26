"""The training configs shipped with lwap, by name: `lwap train quickstart` from any folder.

The repository's `configs/` folder is installed as the package `lwap.configs` (YAML files as package
data), so names work from a clone, an editable install or a wheel alike. A path that exists always wins
over a name; `configs/quickstart.yaml` typed outside the checkout still finds the shipped file.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from lwap.errors import ConfigError

ROWS_FOLDER = "compare/rows"  # `lwap compare --rows` files (lwap/compare/rows.py), not training configs


def shipped_folder() -> Path:
    """Where the shipped configs are installed (the checkout's configs/ for an editable install)."""
    from importlib.resources import files

    return Path(str(files("lwap.configs")))


def shipped_configs() -> dict[str, Path]:
    """Name ('quickstart', 'compare/unsup-minilm') -> file, in name order."""
    root = shipped_folder()
    found = [p for p in root.rglob("*.yaml") if p.parent != root / ROWS_FOLDER]
    files = sorted(found, key=lambda p: (len(p.relative_to(root).parts), p.as_posix()))
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in files}


def description(path: Path) -> str:
    """The first line of the file's header comment: each shipped config opens with a one-line summary."""
    with path.open(encoding="utf-8") as handle:
        first = handle.readline()
    return first.lstrip("#").strip() if first.startswith("#") else ""


def _as_name(value: str) -> str:
    name = value.strip().replace("\\", "/").removeprefix("./").removeprefix("configs/")
    for suffix in (".yaml", ".yml"):
        name = name.removesuffix(suffix)
    return name


def resolve_config(value: str) -> Path:
    """The config file `value` names: an existing path, else a shipped config's name (else ConfigError)."""
    path = Path(value).expanduser()
    if path.exists():
        return path
    shipped = shipped_configs()
    name = _as_name(value)
    if name in shipped:
        return shipped[name]
    close = difflib.get_close_matches(name, list(shipped), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConfigError(
        f"{value}: no such config file, nor a shipped config of that name{hint} "
        "('lwap train --list' shows the shipped configs)"
    )


def format_list() -> str:
    """`lwap train --list`: each shipped config's name and one-line description."""
    shipped = shipped_configs()
    width = max(len(name) for name in shipped)
    lines = [f"{name:<{width}}  {description(path)}" for name, path in shipped.items()]
    lines.append(f"(lwap train NAME runs one; the files are in {shipped_folder()})")
    return "\n".join(lines)
