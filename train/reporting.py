"""`training.report_to`: where the trainer logs, passed through to transformers' `report_to`.

transformers checks an integration's name when the arguments are built, but whether it is installed
only when the trainer builds its callback, with a traceback (or, for some, a warning and no logging at
all). So both are checked here first, against transformers' own lists (`INTEGRATION_TO_CALLBACK`,
`get_available_reporting_integrations`), and a fault is one ConfigError naming the key.

TensorBoard stays lwap's own callback, writing into OUT/tensorboard (transformers' default would be a
dated folder under the checkpoints, which `lwap train` rotates); every other name goes to transformers.
"""

from __future__ import annotations

from transformers.integrations import get_available_reporting_integrations
from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

from lwap.errors import ConfigError, unknown_value

TENSORBOARD = "tensorboard"


def requested(report_to: str | list[str]) -> list[str]:
    """The integration names `training.report_to` asks for; [] for none."""
    names = [report_to] if isinstance(report_to, str) else list(report_to)
    return [] if names == ["none"] else names


def checked_integrations(report_to: str | list[str]) -> list[str]:
    """The names, each one transformers knows and finds installed; ConfigError naming the key otherwise."""
    names = requested(report_to)
    known = tuple(INTEGRATION_TO_CALLBACK)
    for name in names:
        if name not in known:
            raise unknown_value("training.report_to", name, (*known, "none"))
    available = set(get_available_reporting_integrations())
    missing = [name for name in names if name not in available]
    if missing:
        raise ConfigError(
            f"training.report_to: {', '.join(missing)} not installed in this environment (install its "
            f"package or leave it out); installed integrations: {', '.join(sorted(available)) or 'none'}"
        )
    return names


def for_transformers(names: list[str]) -> list[str]:
    """What `TrainingArguments.report_to` gets: every name but TensorBoard (lwap's own callback)."""
    return [name for name in names if name != TENSORBOARD]
