"""What the libraries lwap builds on print while lwap reads its inputs: held back, so a refusal is one line.

`datasets` draws a bar for each file it reads into its cache ("Generating train split", "Map", "Loading
dataset shards"). Drawn while lwap reads and checks a training file, such a bar came before lwap's
one-line refusal of a bad row or a missing column (issue 67), and `training.progress_bar: false` did not
reach it (that setting is transformers' `disable_tqdm`, which `datasets` does not read). So the bars are
off while the data is read and checked, whatever the settings (the run's first line says how many
examples were read), and for the whole run where `training.progress_bar: false` asks for no bars
(`datasets_bars_off`).

The libraries' warnings are another matter: what they say may hold for the run that follows (transformers'
load report of a backbone whose checkpoint has weights the model does not use, or lacks some), so they are
not hidden, only held while a command reads its inputs (`library_warnings_held`): said as they were once
the inputs are good, dropped when lwap refuses them, since the refusal's one line is then what matters
(a backbone's load report came before lwap train's refusal of a bad row: the data is read after the
model is built). Never held during training or encoding, whose warnings are said when they happen.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

from lwap.errors import LwapError

# the loggers of the libraries lwap reads its inputs with (each library's messages log under its name)
LIBRARY_LOGGERS = (
    "transformers",
    "sentence_transformers",
    "datasets",
    "huggingface_hub",
    "accelerate",
    "torch",
)


@contextlib.contextmanager
def datasets_bars_off(off: bool = True) -> Iterator[None]:
    """`datasets`' progress bars off inside (when `off`), and as they were afterwards. A user's own
    `HF_DATASETS_DISABLE_PROGRESS_BARS` (0 or 1) wins, as `datasets` makes it."""
    import datasets

    if not off or datasets.config.HF_DATASETS_DISABLE_PROGRESS_BARS is not None:
        # the variable set: datasets would only log that it takes priority
        yield
        return
    were_off = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not were_off:
            datasets.enable_progress_bars()


class _Held(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def library_warnings_held() -> Iterator[None]:
    """The libraries' log records and Python's warnings raised inside, held: said afterwards, in order
    within each kind, unless a user error (`LwapError`) ends the block; a bug (any other exception) has
    them said too, before its traceback."""
    held = _Held()
    loggers = [logging.getLogger(name) for name in LIBRARY_LOGGERS]
    saved = [(logger.handlers, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.handlers, logger.propagate = [held], False
    refused = False
    try:
        with warnings.catch_warnings(record=True) as caught:  # the filters as they are: only who shows them
            yield
    except LwapError:
        refused = True
        raise
    finally:
        for logger, (handlers, propagate) in zip(loggers, saved, strict=True):
            logger.handlers, logger.propagate = handlers, propagate
        if not refused:
            for record in held.records:  # through the handlers they would have reached
                logging.getLogger(record.name).handle(record)
            for w in caught:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
