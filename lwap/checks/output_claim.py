"""Which outputs are lwap's to write: one rule for every command that writes a folder or a file.

A FOLDER lwap writes (a training run's output.dir, `lwap truncate`'s folder, `lwap eval --output`) is lwap's
when it carries the marker `.lwap-output.json` (made_by, command, run_id, created, version, and `foreign`:
the entries that were there before lwap adopted the folder). A folder that does not exist or is empty is
created and marked; one with the marker is written by its command's own rules; a non-empty folder without
it is refused (one line, exit 2) unless `--overwrite`, which adopts it: its entries are recorded as
foreign, and lwap never replaces or deletes them (a name lwap must write that collides with one is
refused). Run folders of an lwap from before the marker are recognised (`legacy`) and marked, so
`--resume` of them keeps working.

A FILE lwap writes (`lwap encode --output`, `lwap mine --output`) is replaced only with `--overwrite`, and
is written by one process at a time: the lock `.NAME.lwap-lock` beside it (lwap.checks.locking) names the
writer, and is removed at the end.

Why a marker and not "is it empty": an empty-or-not test cannot tell a run folder lwap made yesterday (to
resume, or to overwrite) from a user's folder of papers that happens to be named as output.dir; a file
that says who made the folder can, and it costs one small file.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from lwap.checks.files import check_output, read_json_object, write_failure, write_json_atomically
from lwap.checks.locking import hold
from lwap.errors import ConfigError, LwapError, OutputExistsError, OutputWriteError

MARKER = ".lwap-output.json"
# lwap's own bookkeeping inside a folder it writes (locks, write probes, the marker, partial writes): never a
# user's entry, never "foreign", and no reason to call a folder non-empty
_OWN_HIDDEN = re.compile(r"^\.lwap-|^\..+\.partial-\d+$|^\..+\.lwap-lock$")


def read_marker(folder: Path) -> dict | None:
    """The marker of `folder` (a JSON object), or None when it has none, or one that is not lwap's JSON."""
    path = folder / MARKER
    if not path.is_file() or path.is_symlink():
        return None
    try:
        marker = read_json_object(path)
    except LwapError:
        return None
    return marker if marker.get("made_by") == "lwap" else None


@dataclass(frozen=True)
class FolderClaim:
    """What `check_folder` found: `state` is "new" (missing or empty), "lwap" (marked), "legacy" (an lwap
    folder from before the marker) or "adopted" (a user's folder, with --overwrite); `foreign` are the
    entries lwap must keep."""

    folder: Path
    command: str
    state: str
    foreign: frozenset[str]


def entries(folder: Path) -> list[str]:
    """The names in `folder` that are not lwap's own bookkeeping (sorted; none when it is not a folder)."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if not _OWN_HIDDEN.match(p.name))


def check_folder(
    folder: Path,
    command: str,
    *,
    overwrite: bool,
    writes: tuple[str, ...],
    label: str,
    error: type[LwapError] = ConfigError,
    legacy: Callable[[Path], bool] | None = None,
) -> FolderClaim:
    """Whether `command` may write `writes` (names, or glob patterns such as `checkpoints/*`) in `folder`;
    read-only, so it runs before any model loads. `error` (one line naming the folder) for a user's folder
    without `overwrite`, for a name lwap writes that is a foreign entry, and for what `check_output`
    refuses (a link among what lwap writes, a folder it cannot write in)."""
    check_output(folder, folder=True, label=label, error=error, entries=(*writes, MARKER))
    found = entries(folder)
    marker = read_marker(folder)
    if marker is not None:
        kept = marker.get("foreign")
        state, foreign = "lwap", frozenset(str(name) for name in (kept if isinstance(kept, list) else ()))
    elif not found:
        state, foreign = "new", frozenset()
    elif legacy is not None and legacy(folder):
        state, foreign = "legacy", frozenset()
    elif overwrite:
        state, foreign = "adopted", frozenset(found)
    else:
        raise error(
            f"{label}: {folder} is not empty and was not made by lwap (it has no {MARKER}); lwap leaves it "
            "as it is: choose a new or empty folder, or pass --overwrite to adopt it (lwap then replaces "
            "only its own files)"
        )
    clash = sorted(foreign.intersection(pattern.split("/", 1)[0] for pattern in writes))
    if clash:
        raise error(f"{label}: {_foreign_clash(folder, clash[0], command)}")
    return FolderClaim(folder, command, state, foreign)


def _foreign_clash(folder: Path, name: str, command: str) -> str:
    return (
        f"{folder / name} is not lwap's (it was in {folder} before lwap adopted the folder) and lwap "
        f"{command} writes that name; lwap never replaces it: move it away or choose another folder"
    )


def mark_folder(claim: FolderClaim) -> None:
    """Create the folder and mark it as lwap's (once: a marked folder keeps the marker it has), with a
    one-line note on stderr when an older lwap's folder or a user's adopted folder is marked."""
    claim.folder.mkdir(parents=True, exist_ok=True)
    if claim.state == "lwap" and read_marker(claim.folder) is not None:
        return
    from lwap import __version__

    marker = {
        "made_by": "lwap",
        "command": claim.command,
        "run_id": uuid.uuid4().hex,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "version": __version__,
        "foreign": sorted(claim.foreign),
    }
    write_json_atomically(marker, claim.folder / MARKER)
    if claim.state == "legacy":
        note = f"{claim.folder} was made by an earlier lwap {claim.command}; marked it as lwap's ({MARKER})"
    elif claim.state == "adopted":
        note = (
            f"--overwrite: adopted {claim.folder}; its {len(claim.foreign)} earlier entr"
            f"{'y is' if len(claim.foreign) == 1 else 'ies are'} kept and never replaced ({MARKER})"
        )
    else:
        return
    print(f"lwap {claim.command}: {note}", file=sys.stderr, flush=True)


def claim_folder(
    folder: Path,
    command: str,
    *,
    overwrite: bool,
    writes: tuple[str, ...],
    label: str,
    error: type[LwapError] = ConfigError,
    legacy: Callable[[Path], bool] | None = None,
) -> FolderClaim:
    """`check_folder`, then `mark_folder`: for a writer with nothing to check between the two."""
    claim = check_folder(
        folder, command, overwrite=overwrite, writes=writes, label=label, error=error, legacy=legacy
    )
    mark_folder(claim)
    return claim


@contextlib.contextmanager
def new_contents(claim: FolderClaim) -> Iterator[Path]:
    """A hidden temporary folder inside the claimed folder to write a whole new content to (a saved
    model); when the block ends, lwap's earlier entries are removed and the new ones renamed into place
    (`os.replace`: a link planted meanwhile is replaced, never followed). A new name that is a foreign
    entry is refused (OutputExistsError, one line) before anything is removed; if the block raises, the
    folder keeps what it held."""
    mark_folder(claim)
    folder = claim.folder
    partial = Path(tempfile.mkdtemp(prefix=".lwap-new-", dir=folder))
    try:
        yield partial
        names = sorted(p.name for p in partial.iterdir())
        clash = sorted(claim.foreign.intersection(names))
        if clash:
            raise OutputExistsError(_foreign_clash(folder, clash[0], claim.command))
        for name in entries(folder):
            old = folder / name
            if name in claim.foreign:
                continue
            if old.is_dir() and not old.is_symlink():  # lwap's earlier output: replaced as a whole
                shutil.rmtree(old)
            else:
                old.unlink()
        for name in names:
            os.replace(partial / name, folder / name)
    except OSError as error:
        reason = write_failure(error, folder)
        if reason is None:
            raise
        raise OutputWriteError(f"{folder}: cannot write ({reason})") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def folder_lock(folder: Path, command: str) -> Path:
    """Where a folder writer's lock sits: inside the folder, a hidden lwap name."""
    return folder / f".lwap-{command}.lock"


@contextlib.contextmanager
def locked_folder(folder: Path, command: str) -> Iterator[None]:
    """Hold `folder`'s lock for the block (a second writer gets one line naming this one, exit 2); a
    folder created here only to hold the lock is removed again if the block leaves nothing in it."""
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputWriteError(f"{folder}: cannot create the folder ({error.strerror or error})") from None
    try:
        with hold(folder_lock(folder, command), f"output folder {folder}"):
            yield
    finally:
        if created and not any(folder.iterdir()):
            with contextlib.suppress(OSError):
                folder.rmdir()


def file_lock(path: Path) -> Path:
    """Where a file writer's lock sits: beside the file, hidden (`.NAME.lwap-lock`)."""
    return path.with_name(f".{path.name}.lwap-lock")


def check_file(path: Path, *, overwrite: bool, label: str, option: str = "--output") -> None:
    """`check_output` (one line for a link, a folder, a place lwap cannot write), then OutputExistsError
    for a file already there without `overwrite`; read-only."""
    check_output(path, folder=False, label=label)
    if path.exists() and not overwrite:
        raise OutputExistsError(
            f"{path} already exists; pass --overwrite to replace it, or choose another {option}"
        )


@contextlib.contextmanager
def claim_file(path: Path, *, overwrite: bool, label: str, option: str = "--output") -> Iterator[None]:
    """Hold the file target `path` for the block: checked as `check_file`, then locked (a second writer
    gets one line naming this one, exit 2) and checked again under the lock, since another writer may
    have written it while this one loaded its model. The lock is removed when the block ends."""
    check_file(path, overwrite=overwrite, label=label, option=option)
    with hold(file_lock(path), label):
        check_file(path, overwrite=overwrite, label=label, option=option)
        yield
