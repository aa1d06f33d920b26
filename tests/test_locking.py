"""lwap.checks.locking: one process per lock, the owner named, a dead owner's lock taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lwap.checks.locking import LockedError, LockOwner, claim, hold, read_owner


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    process = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    return int(process.stdout)


def _write_lock(path: Path, pid: int, host: str | None = None, since: float | None = None) -> None:
    owner = {"pid": pid, "host": host or socket.gethostname(), "since": since or time.time()}
    path.write_text(json.dumps(owner), encoding="utf-8")


def test_claim_holds_names_the_owner_and_releases(tmp_path: Path) -> None:
    lock = tmp_path / "sub" / "cell.lock"
    with claim(lock) as mine:
        assert mine and mine.owner.pid == os.getpid() and mine.owner.host == socket.gethostname()
        assert read_owner(lock) == mine.owner
        with claim(lock) as other:  # held by a live process (this one): reported, not raised
            assert not other and other.owner == mine.owner
        with (
            pytest.raises(
                LockedError, match=rf"busy thing is in use by another process \(pid {os.getpid()} on "
            ),
            hold(lock, "busy thing"),
        ):
            pass
    assert not lock.exists()
    assert not list(lock.parent.iterdir())  # no temporary file left either


def test_dead_owner_and_reused_pid_are_taken_over(tmp_path: Path) -> None:
    lock = tmp_path / "cell.lock"
    _write_lock(lock, _dead_pid())
    with claim(lock) as mine:
        assert mine and read_owner(lock).pid == os.getpid()
    lock.write_text(str(_dead_pid()), encoding="utf-8")  # a bare pid: the grid's cell locks before
    with claim(lock) as mine:
        assert mine
    # a live pid that started after the lock was taken (the pid was reused): the owner is gone
    _write_lock(lock, os.getpid(), since=time.time() - 10 * 365 * 86400)
    if Path("/proc/self/stat").exists():
        with claim(lock) as mine:
            assert mine


def test_other_hosts_and_unreadable_locks_are_respected(tmp_path: Path) -> None:
    lock = tmp_path / "cell.lock"
    _write_lock(lock, _dead_pid(), host="another-machine")  # cannot be checked from here: trusted
    with claim(lock) as mine:
        assert not mine and mine.owner.host == "another-machine"
    lock.write_text("", encoding="utf-8")  # being written, or not ours
    with pytest.raises(LockedError, match="unreadable lock file"), hold(lock, "x"):
        pass
    assert lock.exists()


RACER = """
import os, sys, time
from pathlib import Path
from lwap.checks.locking import claim
lock, start, racers = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
while time.time() < start:
    pass
with claim(lock) as mine:
    print("held" if mine else "busy", flush=True)
    (lock.parent / f"tried-{os.getpid()}").touch()
    deadline = time.time() + 120
    while mine and len(list(lock.parent.glob("tried-*"))) < racers and time.time() < deadline:
        time.sleep(0.05)  # held until every racer has tried
"""


def test_only_one_of_many_processes_takes_a_dead_lock(tmp_path: Path) -> None:
    """Six processes start at once on a lock left by a dead process: exactly one holds it."""
    lock = tmp_path / "cell.lock"
    _write_lock(lock, _dead_pid())
    start = time.time() + 3  # most have started (imported) by then; a late one still finds the lock held
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(lock), str(start), "6"], stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    said = sorted(p.communicate(timeout=180)[0].strip() for p in racers)
    assert said == ["busy"] * 5 + ["held"], said
    assert not lock.exists()


def test_owner_description() -> None:
    owner = LockOwner(123, "box", 0.0)
    assert owner.describe() == "pid 123 on box, since 1970-01-01 00:00:00 UTC"


def test_a_lock_that_cannot_be_written_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from lwap.errors import OutputWriteError

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", full)
    says = r"cell\.lock: cannot write \(No space left"
    with pytest.raises(OutputWriteError, match=says), claim(tmp_path / "cell.lock"):
        pass
    assert list(tmp_path.iterdir()) == []
