"""The `datasets` cache lwap's data loading writes (HF_DATASETS_CACHE): a damaged entry is rebuilt once, a
cache that cannot be written is one line naming the folder.

lwap reads every training file into an Arrow file there (lwap.train.data). An entry an earlier run left
damaged (a truncated .arrow, a garbled dataset_info.json: a crash, a full disk, a copied cache) made every
later `lwap train` and `lwap mine` end in a pyarrow or JSON traceback, since `datasets` trusts a finished
entry. Here the entry that failed to load is removed, with a note naming it, and built again once; if it
fails again the refusal names the cache folder and how to clear it. A build the file system refuses (a full
disk, a read-only or unwritable folder) is one line naming the folder and what to do; `datasets` itself
builds into `<entry>.incomplete` and removes that on any error, so nothing half-built is left to load.
"""

from __future__ import annotations

import errno
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from lwap.checks.files import write_failure
from lwap.errors import DataError, LwapError, OutputWriteError

T = TypeVar("T")
# besides the refused writes of lwap.checks.files.WRITE_ERRNOS: a folder lwap may not write into
UNWRITABLE_ERRNOS = frozenset({errno.EACCES, errno.EPERM})


def cache_root() -> Path:
    """The folder `datasets` caches in (HF_DATASETS_CACHE, by default ~/.cache/huggingface/datasets)."""
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE).expanduser()


def through_cache(build: Callable[[], T], label: str, entry: Path | None = None) -> T:
    """`build()`, which reads or writes the `datasets` cache for `label`. `entry` is the cache file or folder
    it uses where the caller knows it (a `map`'s cache file); otherwise it is the builder's, found where the
    error was raised. An LwapError (a fault of the data itself) passes unchanged; so does an error that is
    neither a refused write nor a finished cache entry failing to load."""
    try:
        return build()
    except LwapError:
        raise
    except Exception as error:
        _refuse_unwritable(error)
        damaged = None
        if _unreadable(error):
            damaged = entry if entry is not None and entry.exists() else _builder_entry(error.__traceback__)
        if damaged is None:
            raise
        print(
            f"lwap: the datasets cache entry {damaged} for {label} is damaged ({_first_line(error)}); "
            f"removed it, building it again",
            file=sys.stderr,
            flush=True,
        )
        _remove(damaged)
    try:
        return build()
    except LwapError:
        raise
    except Exception as error:
        _refuse_unwritable(error)
        raise DataError(
            f"{label}: the datasets cache entry for it is still unreadable after a rebuild "
            f"({_first_line(error)}); clear the datasets cache folder {cache_root()} (HF_DATASETS_CACHE): "
            f"remove it, or point HF_DATASETS_CACHE at an empty folder"
        ) from None


def _refuse_unwritable(error: BaseException) -> None:
    """OutputWriteError naming the cache folder if `error` is the file system refusing a write there."""
    root = cache_root()
    reason = write_failure(error, root if root.is_dir() else None)
    if reason is None:
        current: BaseException | None = error
        seen: set[int] = set()
        while current is not None and reason is None and id(current) not in seen:
            seen.add(id(current))
            if isinstance(current, OSError) and current.errno in UNWRITABLE_ERRNOS:
                reason = current.strerror or "not writable"
            current = current.__cause__ or current.__context__
    if reason is not None:
        raise OutputWriteError(
            f"the datasets cache folder {root} (HF_DATASETS_CACHE) cannot be written ({reason}): free space "
            f"there, or point HF_DATASETS_CACHE at a writable folder with room"
        ) from None


def _unreadable(error: BaseException) -> bool:
    """Whether `error` (or what caused it) is a file that does not parse: Arrow or JSON cut short or garbled.
    Any other error (a missing split, the hub offline) leaves the entry alone: it may be whole."""
    import json

    import pyarrow as pa

    damage = (pa.ArrowException, json.JSONDecodeError, UnicodeDecodeError, EOFError)
    current: BaseException | None = error
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, damage):
            return True
        current = current.__cause__ or current.__context__
    return False


def _builder_entry(traceback: TracebackType | None) -> Path | None:
    """The finished cache folder of the `datasets` builder the error came through, if it exists.

    Read from the traceback: `datasets` raises the pyarrow or JSON error of a damaged entry inside the
    builder's own methods (its constructor reading dataset_info.json, `as_dataset` reading the .arrow), and
    offers no other way to ask which entry a `load_dataset` or `from_generator` call used. The builder
    writes into `<entry>.incomplete` and renames it only when whole, so an existing entry was a finished one.
    """
    from datasets.builder import DatasetBuilder

    found: Path | None = None
    while traceback is not None:
        owner: Any = traceback.tb_frame.f_locals.get("self")
        if isinstance(owner, DatasetBuilder) and getattr(owner, "_cache_dir", None):
            found = Path(owner._cache_dir)
        traceback = traceback.tb_next
    if found is None or not found.is_dir() or not found.is_relative_to(cache_root()):
        return None
    return found


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
