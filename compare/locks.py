"""One process per cell: several `lwap compare run` processes (one per core, say) can share one grid.

The whole API is `claim(lock)`, a context manager yielding whether this process holds the lock; swap
this module to change how cells are locked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def lock_owner_alive(lock: Path) -> bool:
    """Whether the process named in a cell's lock file still runs (an empty lock, whose owner has not yet
    written its pid, counts as held)."""
    try:
        os.kill(int(lock.read_text(encoding="utf-8")), 0)
    except (ValueError, PermissionError):  # empty lock; or a live process of another user
        return True
    except OSError:  # no such process, or the lock is gone
        return False
    return True


@contextlib.contextmanager
def claim(lock: Path) -> Iterator[bool]:
    """True while this process holds `lock`. The lock holds its owner's pid; a lock left by a process
    that is gone (killed) is taken over, so a stopped grid still resumes."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        if lock_owner_alive(lock):
            yield False
            return
        lock.unlink(missing_ok=True)
        with claim(lock) as mine:  # one retry: another process may take it over first
            yield mine
        return
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))
    try:
        yield True
    finally:
        lock.unlink(missing_ok=True)
