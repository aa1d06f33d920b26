"""Where the offline data mirror lives.

`LWAP_DATA_DIR` points at a folder laid out like the project's `../shared/data` (stsb/, sts12-16/, sick/,
wiki/, nli/, beir-scifact/). Unset, a `shared/data` folder beside the repository checkout is used, so the
quick start works from a fresh clone without configuration. Without a mirror, `lwap.data_sources` falls
back to the sample packaged with lwap, then to the Hugging Face hub.
"""

from __future__ import annotations

import os
from pathlib import Path

from lwap.errors import DataError

DATA_DIR_VARIABLE = "LWAP_DATA_DIR"
_CHECKOUT_SIBLING = Path(__file__).resolve().parents[2] / "shared" / "data"


def _configured() -> tuple[Path, str]:
    """The mirror folder that applies now, and how it was chosen (for messages)."""
    configured = os.environ.get(DATA_DIR_VARIABLE)
    if configured:
        return Path(configured).expanduser(), f"${DATA_DIR_VARIABLE}={configured}"
    return _CHECKOUT_SIBLING, f"default {_CHECKOUT_SIBLING}"


def find_data_dir() -> Path | None:
    """The data mirror folder, or None if there is none (no error: callers fall back)."""
    folder, _ = _configured()
    return folder if folder.is_dir() else None


def describe_data_dir() -> str:
    """'$LWAP_DATA_DIR=/x' or 'default /path', plus what is wrong with it (missing, a file, empty)."""
    folder, source = _configured()
    if folder.is_dir():
        return source if any(folder.iterdir()) else f"{source}: empty folder"
    return f"{source}: is a file, expected a folder" if folder.exists() else f"{source}: no such folder"


def data_dir() -> Path:
    """The data mirror folder; DataError naming the variable if it is not there."""
    folder = find_data_dir()
    if folder is None:
        raise DataError(
            f"data folder not found ({_configured()[1]}); set {DATA_DIR_VARIABLE} to the data mirror"
        )
    return folder


def expand_path(value: str) -> Path:
    """A path as a config or an argument gives it, with `$VARS` and `~` expanded: how lwap reads every one."""
    return Path(os.path.expandvars(value)).expanduser()


def expand_data_path(value: str) -> Path:
    """`expand_path`, with `$LWAP_DATA_DIR` standing for the data mirror even where the variable is unset."""
    for token in (f"${{{DATA_DIR_VARIABLE}}}", f"${DATA_DIR_VARIABLE}"):
        if token in value:
            value = value.replace(token, str(data_dir()))
    return expand_path(value)


def mirror_relative(value: str) -> str | None:
    """'wiki/x.txt.gz' for '$LWAP_DATA_DIR/wiki/x.txt.gz' (or '${LWAP_DATA_DIR}/...'); None otherwise."""
    for token in (f"${{{DATA_DIR_VARIABLE}}}/", f"${DATA_DIR_VARIABLE}/"):
        if value.startswith(token):
            return value[len(token) :].lstrip("/")
    return None
