"""One process at a time per folder or task: a lock file that names its owner, taken over once it is dead.

Used by every lwap writer (lwap.checks.output_claim: a training run, encode, mine, truncate, eval --output)
and by the pooler grid (one process per cell). The lock file holds the owner's pid, host, start time and
command line (JSON), so a second writer is told who holds it. It appears atomically, already complete: it is
written under a temporary name and hard-linked into place, which fails if a lock is already there (the
O_CREAT|O_EXCL test, without the moment in which an empty lock exists); file systems without hard
links get O_CREAT|O_EXCL itself. A lock whose owner is gone — same host, and no such process, or a
process that started after the lock did (its pid reused) — is taken over; a lock from another host is
trusted, since its process cannot be checked from here. A takeover says so on stderr (one line naming the
dead owner), and the lock's removal at the end never raises over the error the block raises.

Why not `fcntl.flock` alone, which the kernel releases when its owner dies: the file would not say who
holds it (the message a second run prints), and flock is unreliable on network file systems. It is used
only to make a takeover safe: two processes that both find the same dead lock cannot both replace it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import socket
import stat
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from lwap.checks.files import read_limited
from lwap.checks.limits import JSON_FILE
from lwap.errors import LwapError, OutputWriteError


class LockedError(LwapError):
    """Another live process holds the lock (the message names it: pid, host, since when)."""

    def __init__(self, message: str, owner: LockOwner | None) -> None:
        super().__init__(message)
        self.owner = owner


@dataclass(frozen=True)
class LockOwner:
    """Who holds a lock: what its file says."""

    pid: int
    host: str
    since: float  # time.time() when the lock was taken
    command: str = ""  # the owner's command line, shortened (empty in locks written before it was kept)

    @classmethod
    def this_process(cls) -> LockOwner:
        return cls(os.getpid(), socket.gethostname(), time.time(), command_line())

    def describe(self) -> str:
        since = datetime.fromtimestamp(self.since, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        running = f", running `{self.command}`" if self.command else ""
        return f"pid {self.pid} on {self.host}, since {since}{running}"

    def is_alive(self) -> bool:
        """False only when provably gone: on this host, with no such process, or with that pid now
        belonging to a process that started after the lock was taken."""
        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # a live process of another user
            return True
        started = process_start_time(self.pid)
        return started is None or started <= self.since + 1.0  # 1 s: the clock ticks it is read in


@dataclass(frozen=True)
class Claim:
    """What `claim` got: `held` (true in a boolean test) while this process holds the lock; otherwise
    `owner` is the live process that does (None if its lock file cannot be read)."""

    held: bool
    owner: LockOwner | None
    path: Path

    def __bool__(self) -> bool:
        return self.held


COMMAND_CHARS = 200  # a lock names its owner's command this long at most: enough to recognise it


def command_line(argv: list[str] | None = None) -> str:
    """This process's command as a user would type it (`lwap encode --input x --output y`; `python -m lwap`
    and the `lwap` script both read as `lwap`), cut to COMMAND_CHARS."""
    argv = list(sys.argv if argv is None else argv)
    program = Path(argv[0]).name if argv else "python"
    if program in ("lwap", "__main__.py") or (program == "-m" and argv[1:2] == ["lwap"]):
        program = "lwap"
    text = shlex.join([program, *argv[1:]])
    return text if len(text) <= COMMAND_CHARS else text[: COMMAND_CHARS - 3] + "..."


def process_start_time(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), from /proc; None where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text(encoding="utf-8").splitlines()
            if line.startswith("btime ")
        )
    except (OSError, StopIteration, ValueError):
        return None
    ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the name in (...) may contain spaces
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def read_owner(path: Path) -> LockOwner | None:
    """The owner a lock file names, or None if it is gone, empty or not a lock file of ours. A bare pid
    (the pooler grid's cell locks before this module) is read as a lock of this host, taken then."""
    try:
        text = read_limited(path, JSON_FILE).decode("utf-8").strip()  # a FIFO or /dev/zero: not a lock
        if text.isdigit():
            return LockOwner(int(text), socket.gethostname(), path.stat().st_mtime)
        raw = json.loads(text)
        command = raw.get("command")
        command = command if isinstance(command, str) else ""
        return LockOwner(int(raw["pid"]), str(raw["host"]), float(raw["since"]), command)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _create(path: Path, owner: LockOwner) -> bool:
    """Put a lock naming `owner` at `path` unless one is there; True if this call created it."""
    text = json.dumps(asdict(owner)) + "\n"
    temporary = path.with_name(f".{path.name}.new-{owner.pid}")
    temporary.unlink(missing_ok=True)
    try:
        temporary.write_text(text, encoding="utf-8")
    except OSError as error:  # a full disk, a read-only folder: one line, as for any output
        temporary.unlink(missing_ok=True)
        # worded as every refused output write (lwap.checks.files.atomic_path): the path says it is a lock
        raise OutputWriteError(f"{path}: cannot write ({error.strerror or error})") from None
    try:
        os.link(temporary, path)
        return True
    except FileExistsError:
        return False
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
    finally:
        temporary.unlink(missing_ok=True)
    try:  # no hard links here: O_EXCL, and the content written right after
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    return True


def _remove_if_dead(path: Path) -> bool | LockOwner:
    """Remove the lock at `path` if its owner is provably gone: that owner (its lock removed), True if the
    lock vanished or was replaced meanwhile, False if it stays.

    Serialised with flock on the lock file itself: of two processes that found the same dead lock, the
    second one sees that the path now holds another file (the first one's new lock) and leaves it.
    """
    try:  # opened without blocking: a FIFO where the lock should be is not ours, never waited on
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return True
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        return False
    with os.fdopen(descriptor, "rb") as handle:
        with contextlib.suppress(ImportError, OSError):
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino != os.fstat(handle.fileno()).st_ino:
                return True  # replaced meanwhile: try again from the start
        except FileNotFoundError:
            return True
        owner = read_owner(path)
        if owner is None or owner.is_alive():  # unreadable: a lock being written, or not ours
            return False
        path.unlink(missing_ok=True)
        return owner


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def claim(path: Path) -> Iterator[Claim]:
    """Hold the lock at `path` for the block if no live process holds it; never waits, never raises
    for a held lock. The block gets a `Claim`, false when another process holds the lock:

        with claim(folder / "cell.lock") as mine:
            if not mine:
                print(f"busy: {mine.owner.describe()}")
                return
            ...  # this process alone runs here
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    me = LockOwner.this_process()
    for _ in range(3):  # a takeover can race with another process's: look again
        if _create(path, me):
            break
        removed = _remove_if_dead(path)
        if not removed:
            yield Claim(False, read_owner(path), path)
            return
        if isinstance(removed, LockOwner):
            _say(f"lwap: took over the lock {path} of {removed.describe()}: that process is no longer alive")
    else:
        yield Claim(False, read_owner(path), path)
        return
    try:
        yield Claim(True, me, path)
    finally:
        _release(path, me)


def _release(path: Path, me: LockOwner) -> None:
    """Remove this process's lock; a failure (a folder turned read-only meanwhile) is one line on stderr,
    never an exception: it runs in `claim`'s finally, where it would hide the error being raised."""
    try:
        if read_owner(path) == me:  # never remove a lock that is no longer ours
            path.unlink(missing_ok=True)
    except OSError as error:
        _say(f"lwap: could not remove the lock file {path} ({error.strerror or error}); remove it by hand")


@contextlib.contextmanager
def hold(path: Path, what: str) -> Iterator[Claim]:
    """`claim`, raising `LockedError` (one line naming the owner and `what` is busy) when it is held."""
    with claim(path) as mine:
        if not mine:
            owner = mine.owner.describe() if mine.owner else f"an unreadable lock file {path}"
            raise LockedError(
                f"{what} is in use by another process ({owner}); wait for it to end or stop it "
                f"(a lock left by a process that died is taken over; lock file: {path})",
                mine.owner,
            )
        yield mine
