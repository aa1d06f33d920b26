"""User-facing error types.

Every error a user can cause (a bad file, a bad config key, a missing model) derives from
`LwapError`. The CLI turns it into one line on stderr and exit code 2; library callers can catch
the specific subclass. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence


class LwapError(Exception):
    """Base class of every error caused by user input, never by a bug in lwap."""


class ConfigError(LwapError, ValueError):
    """A training/eval config is malformed: unknown key, wrong type, impossible value."""


class DataError(LwapError, ValueError):
    """A data file is missing, empty or malformed (the message names file and line)."""


class BackboneNotFoundError(LwapError, OSError):
    """A backbone id or folder cannot be resolved to weights on this machine."""


class ModelLoadError(LwapError, OSError):
    """A saved model folder cannot be loaded (missing, incomplete, untrusted or not a model)."""


class InputError(LwapError, TypeError):
    """Input to `encode` has the wrong type (the message names the index and the type)."""


class OutputExistsError(LwapError, FileExistsError):
    """The output folder already holds a finished model and overwriting was not asked for."""


class OutputWriteError(LwapError, OSError):
    """An output file could not be written (disk full, file too large, no permission)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (what a scheduler or `kill` sends) or SIGHUP (a closed terminal), raised where the process
    is, as Ctrl-C's KeyboardInterrupt is: every `finally` and cleanup that Ctrl-C runs (partial files,
    temporary caches, locks) runs for it too. The CLI exits with 128 + `signum`, as a shell reports it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def unknown_value(key: str, value: object, valid: Sequence[str]) -> ConfigError:
    """The error for a value outside a fixed set of choices: names the key, a close match and all valid."""
    close = difflib.get_close_matches(str(value), valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ConfigError(f"{key}: unknown value {value!r}{hint}; valid: {', '.join(valid)}")
