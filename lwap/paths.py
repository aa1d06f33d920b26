"""Where the offline data mirror lives.

`LWAP_DATA_DIR` points at a folder laid out like the project's `../shared/data` (stsb/, sts12-16/, sick/,
wiki/, nli/, beir-scifact/). Unset, a `shared/data` folder beside the repository checkout is used, so the
quick start works from a fresh clone without configuration.
"""

from __future__ import annotations

import os
from pathlib import Path

from lwap.errors import DataError

DATA_DIR_VARIABLE = "LWAP_DATA_DIR"
_CHECKOUT_SIBLING = Path(__file__).resolve().parents[2] / "shared" / "data"


def data_dir() -> Path:
    """The data mirror folder; DataError naming the variable if it is not there."""
    configured = os.environ.get(DATA_DIR_VARIABLE)
    folder = Path(configured).expanduser() if configured else _CHECKOUT_SIBLING
    if not folder.is_dir():
        source = f"${DATA_DIR_VARIABLE}={configured}" if configured else f"default {folder}"
        raise DataError(f"data folder not found ({source}); set {DATA_DIR_VARIABLE} to the data mirror")
    return folder


def expand_data_path(value: str) -> Path:
    """Expand `$LWAP_DATA_DIR` (and other variables, `~`) in a path from a config file."""
    for token in (f"${{{DATA_DIR_VARIABLE}}}", f"${DATA_DIR_VARIABLE}"):
        if token in value:
            value = value.replace(token, str(data_dir()))
    return Path(os.path.expandvars(value)).expanduser()
