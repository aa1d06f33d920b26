"""Writing files and folders so a half-written one never looks complete; reading what lwap reads, bounded.

Training, evaluation and `lwap encode` all go through here, so the same bad-input cases (missing file,
a folder, empty file, not UTF-8, truncated gzip) give the same DataError messages everywhere
(docs/RELIABILITY.md rows 10-15, 21), every output path is checked before any work (`check_output`,
row 51 and the path matrix), and every output is renamed into place only once complete (rows 44-46).
Every file is opened one way (`open_regular`: regular files only, no FIFO, device or socket) and read
within its kind's limit (lwap.checks.limits: whole files by size, data files by the length of a line).
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import math
import os
import re
import shutil
import stat
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from lwap.checks.limits import CSV_FILE, JSON_FILE, LINE, YAML_FILE, Limit
from lwap.checks.safe_yaml import parse_yaml
from lwap.errors import DataError, LwapError, OutputWriteError

# --- writing ------------------------------------------------------------------------------------------


def _partial_path(path: Path) -> Path:
    """The temporary name `path` is written under: hidden, beside it (so the rename stays on one file
    system and is atomic) and unique to this process."""
    return path.with_name(f".{path.name}.partial-{os.getpid()}")


def leftover_partials(path: Path) -> list[Path]:
    """Temporary names of `path` that a crashed writer (any process) left behind."""
    return sorted(path.parent.glob(f".{path.name}.partial-*"))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path to write the file or folder `path` to; rename it onto `path` when the block
    ends, or remove it if the block raises.

    A crash leaves at most a hidden `.NAME.partial-PID`, never a `path` that looks complete. A folder
    already at `path` is replaced by a folder (removed just before the rename: `os.replace` cannot
    replace a non-empty folder). A write the file system refuses (disk full, quota, read-only: see
    `write_failure`) becomes an OutputWriteError naming `path`. There is no fsync (nor was there before):
    the rename guards against the process dying mid-write (what lwap promises, docs/RELIABILITY.md rows
    44-46), not against a power cut.
    """
    partial = _partial_path(path)
    _remove(partial)  # a previous process with the same id
    try:
        yield partial
        if partial.is_dir() and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        os.replace(partial, path)
    except BaseException as error:
        _remove(partial)
        reason = write_failure(error, path.parent)
        if reason is not None:  # a full disk, a quota, a read-only file system: one line naming `path`
            raise OutputWriteError(f"{path}: cannot write ({reason})") from None
        raise


# errno values that mean the file system refused a write (not a bug, not a bad input)
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
_OS_ERROR_CODE = re.compile(r"\(os error (\d+)\)")  # how Rust (safetensors) prints an io::Error
_TORCH_WRITER = ("PytorchStreamWriter", "unexpected pos", "file write failed")


def write_failure(error: BaseException, where: Path | None = None) -> str | None:
    """Why a write failed, in a few words, if `error` (or what caused it) is the file system refusing it:
    a full disk, a quota, a read-only file system, a file size limit; None for any other error.

    Three writers report it three ways: Python's OSError carries the errno; safetensors' SafetensorError
    only the OS error's text (`... (os error 28)`); torch.save's zip writer nothing but a position
    mismatch, so for it the free space left under `where` is told instead.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, LwapError):
            return None
        if isinstance(current, OSError) and current.errno in WRITE_ERRNOS:
            return current.strerror or os.strerror(current.errno)
        text = str(current)
        code = _OS_ERROR_CODE.search(text)
        if code and int(code.group(1)) in WRITE_ERRNOS:
            return os.strerror(int(code.group(1)))
        if isinstance(current, RuntimeError) and any(mark in text for mark in _TORCH_WRITER):
            first = text.strip().splitlines()[0] if text.strip() else "RuntimeError"
            return f"torch.save failed: {first}{_free_space(where)}"
        current = current.__cause__ or current.__context__
    return None


def _free_space(where: Path | None) -> str:
    if where is None:
        return ""
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return ""
    return f"; {free / 2**20:.1f} MiB free on that file system"


def finite_json(data: Any) -> Any:
    """`data` with every NaN and infinity replaced by None: JSON has no such numbers (Python's `json`
    writes a bare `NaN`, which other JSON readers reject)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite_json(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite_json(value) for value in data]
    return data


def write_text_atomically(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` through `atomic_path`."""
    with atomic_path(path) as partial:
        partial.write_text(text, encoding="utf-8")


def write_json_atomically(data: dict[str, Any], path: Path) -> None:
    """`data` as indented, strict JSON (non-finite numbers as null) with a final newline, through
    `atomic_path`."""
    write_text_atomically(path, json.dumps(finite_json(data), indent=2, allow_nan=False) + "\n")


def save_figure_atomically(figure: Any, path: Path, **savefig: Any) -> None:
    """`figure.savefig` through `atomic_path`; the format comes from `path`'s suffix, since the temporary
    name has none matplotlib would know."""
    with atomic_path(path) as partial:
        figure.savefig(partial, format=path.suffix.removeprefix("."), **savefig)


def check_output(
    path: Path,
    *,
    folder: bool,
    label: str | None = None,
    error: type[LwapError] = OutputWriteError,
    entries: tuple[str, ...] = (),
) -> None:
    """`error` unless `path` can be written as a file (or, with `folder`, a folder); creates nothing.

    Checked before any model is loaded, so a bad output path costs a second, not a finished computation,
    and never an OSError traceback at the end: a symbolic link loop or one that leads nowhere, the wrong
    kind of thing already there, a parent that is a file, or a folder this process cannot write in
    (tried with a temporary file, since permission bits do not stop root but a read-only file system
    does). A file output must not be a link (lwap replaces what it writes: the link, not what it leads
    to); a folder output may be a link to a folder, but what lwap writes inside it (`entries`, glob
    patterns relative to it, e.g. `checkpoints/*`) must not be links (lwap would write, or remove, where
    they lead).
    """
    label = str(path) if label is None else label
    expected = "a folder" if folder else "a file"
    too_long = name_too_long(path)
    if too_long:
        raise error(f"{label}: {too_long}")
    try:
        path.stat()
    except OSError as problem:
        if problem.errno == errno.ELOOP:
            raise error(f"{label}: is a symbolic link loop, expected {expected}") from None
        if path.is_symlink():
            raise error(
                f"{label}: is a symbolic link to {os.readlink(path)}, which does not exist; remove the link "
                f"or make it lead to {expected}"
            ) from None
    if path.exists() and path.is_dir() != folder:
        raise error(f"{label}: is {'a file' if folder else 'a directory'}, expected {expected}")
    if not folder and path.is_symlink():
        raise error(
            f"{label}: is a symbolic link (to {os.readlink(path)}); lwap would replace the link, not what "
            "it leads to: name that file itself, or remove the link"
        )
    for pattern in entries if path.is_dir() else ():
        for inside in sorted(path.glob(pattern)):
            if inside.is_symlink():
                raise error(
                    f"{label}: {inside.relative_to(path)} is a symbolic link (to {os.readlink(inside)}); "
                    "lwap writes and replaces it, and would write or remove where it leads: remove the link"
                )
    existing = path if path.is_dir() else path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise error(f"{label}: not writable ({existing} is a file, not a folder)")
    try:
        handle, probe = tempfile.mkstemp(prefix=".lwap-write-test-", dir=existing)
        os.close(handle)
        os.unlink(probe)
    except OSError as problem:
        raise error(f"{label}: not writable ({existing}: {problem.strerror or problem})") from None


def name_too_long(path: Path) -> str | None:
    """What is too long in `path` for the file system it would be on (a name over NAME_MAX, usually 255
    bytes, or the whole path over PATH_MAX), or None. Asked before any `stat`, which would raise
    ENAMETOOLONG from inside `Path.exists`."""
    existing = path.absolute()
    while existing != existing.parent:
        try:
            if existing.is_dir():
                break
        except OSError:
            pass
        existing = existing.parent
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
        path_max = os.pathconf(existing, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > name_max:
            shown = part if len(part) <= 40 else f"{part[:20]}…{part[-12:]}"
            return f"the name {shown!r} is {size} bytes, longer than the file system allows ({name_max})"
    size = len(os.fsencode(str(path.absolute())))
    if size >= path_max:
        return f"the path is {size} bytes, longer than the file system allows ({path_max - 1})"
    return None


# --- reading ------------------------------------------------------------------------------------------
#
# One way to open what lwap reads (`open_regular`): a regular file only, links followed and a loop
# caught, a named pipe refused before it is opened (opening one blocks until a writer comes), a device
# (/dev/zero never ends) or socket refused by name. Whole files are read up to their kind's limit
# (`read_limited`, lwap.checks.limits), data files line by line with a bound on each line (`decoded_lines`).

UTF8_ERROR = "{label}:{line}: not valid UTF-8 ({reason} at byte {byte} of the line)"
_SPECIAL_FILES = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def file_status(path: Path, label: str | None = None, *, key: str | None = None) -> os.stat_result:
    """`os.stat` of `path`, links followed, if it is a regular file; DataError naming it otherwise: no
    such file, a link that leads to no file, a link loop, a directory, a FIFO, device or socket.

    Asked before the file is opened, so a named pipe is refused without blocking on it. `label` is how
    the file is named in the message (default: the path); `key` is the config key it came from.
    """
    path = Path(path)
    label = str(path) if label is None else label
    source = f" ({key})" if key else ""
    try:
        status = os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise DataError(f"{label}: is a symbolic link loop, expected a file{source}") from None
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            if path.is_symlink():
                raise DataError(f"{label}: a symbolic link that leads to no file{source}") from None
            raise DataError(f"{label}: no such file{source}") from None
        raise DataError(f"{label}: cannot read ({error.strerror or error}){source}") from None
    if stat.S_ISDIR(status.st_mode):
        raise DataError(f"{label}: is a directory, expected a file{source}")
    if not stat.S_ISREG(status.st_mode):
        kind = _SPECIAL_FILES.get(stat.S_IFMT(status.st_mode), "not a regular file")
        raise DataError(f"{label}: is {kind}, expected a regular file{source}")
    return status


def check_file(
    path: Path, label: str | None = None, *, key: str | None = None, allow_empty: bool = False
) -> None:
    """DataError unless `path` is an existing (and, unless `allow_empty`, non-empty) regular file
    (`file_status`). Checked up front so the user gets one line before any work starts."""
    label = str(path) if label is None else label
    if file_status(path, label, key=key).st_size == 0 and not allow_empty:
        raise DataError(f"{label}: file is empty")


@contextlib.contextmanager
def open_regular(path: Path, label: str | None = None) -> Iterator[BinaryIO]:
    """`path` opened for reading in binary, if it is a regular file (`file_status`).

    Opened non-blocking and checked again on the open descriptor: a FIFO put in its place between the
    check and the open can neither block the open nor be read.
    """
    label = str(path) if label is None else label
    file_status(path, label)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise DataError(f"{label}: cannot read ({error.strerror or error})") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = _SPECIAL_FILES.get(stat.S_IFMT(mode), "not a regular file")
            raise DataError(f"{label}: is {kind}, expected a regular file")
        os.set_blocking(descriptor, True)
        handle = os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise
    with handle:
        yield handle


def read_limited(path: Path, limit: Limit, label: str | None = None) -> bytes:
    """The bytes of the regular file `path`; DataError naming it and `limit` if it has more than the
    limit allows. Read with the bound too, for a file whose size changes or is not what stat says."""
    label = str(path) if label is None else label
    with open_regular(path, label) as handle:
        bound = limit.value()
        size = os.fstat(handle.fileno()).st_size
        if size > bound:
            raise DataError(limit.refusal(label, size))
        data = handle.read(bound + 1)
    if len(data) > bound:
        raise DataError(limit.refusal(label, len(data), "bytes or more"))
    return data


def bounded_lines(handle: BinaryIO, label: str, limit: Limit = LINE) -> Iterator[tuple[int, bytes]]:
    """(line number, line as bytes with its LF) of `handle`, never holding more than `limit` bytes of one
    line: a longer line is a DataError naming `label` and the line, raised once the bound is read."""
    bound = limit.value()
    number = 0
    while raw := handle.readline(bound + 1):
        number += 1
        if len(raw) > bound and not (len(raw) == bound + 1 and raw.endswith(b"\n")):
            raise DataError(
                f"{label}:{number}: the line is longer than the {limit.what} limit of {bound:,} bytes (set "
                f"{limit.variable} to raise it, if the file is meant to have lines this long)"
            )
        yield number, raw


def decoded_lines(
    path: Path, label: str | None = None, *, utf8_error: str = UTF8_ERROR
) -> Iterator[tuple[int, str]]:
    """(line number, line with its ending) of a UTF-8 file, `.gz` decompressed on the fly.

    The file is opened with `open_regular` and read line by line with the bound lwap.checks.limits.LINE
    (`bounded_lines`): one enormous line, gzipped or not, is a DataError naming it once the bound is
    read, never read whole. Lines are split on LF only, never with `str.splitlines`, which would also
    break lines at form feeds and Unicode separators inside sentences; the ending is kept for callers
    that need it (the CSV reader). Each line is decoded on its own so an invalid byte is a DataError
    naming the line (`utf8_error`, a template with {label} {line} {reason} {byte}), and a broken gzip
    stream is one too, not an EOFError. (datasets' own text/CSV loaders read in blocks, so their errors
    name neither the file nor the line.)
    """
    path = Path(path)
    label = str(path) if label is None else label
    number = 0
    try:
        with contextlib.ExitStack() as stack:
            handle: BinaryIO = stack.enter_context(open_regular(path, label))
            if path.name.lower().endswith(".gz"):
                handle = stack.enter_context(gzip.GzipFile(fileobj=handle, mode="rb"))  # type: ignore[arg-type]
            for number, raw in bounded_lines(handle, label):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    where = {"label": label, "line": number, "reason": error.reason, "byte": error.start}
                    raise DataError(utf8_error.format(**where)) from None
                yield number, line
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise DataError(
            f"{label}: truncated or corrupt gzip file (read {number} complete lines; {error})"
        ) from None


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without its line ending) of a checked, non-empty UTF-8 file (`.gz` or not)."""
    path = Path(path)
    check_file(path)
    number = 0
    for number, line in decoded_lines(path):
        yield number, line.removesuffix("\n").removesuffix("\r")
    if number == 0:  # a .gz that decompresses to nothing
        raise DataError(f"{path}: file is empty")


# --- structured files read back (JSON, YAML, CSV) -------------------------------------------------------


def _read_text(path: Path, label: str, limit: Limit) -> str:
    """The whole UTF-8 text of `path` (`read_limited`); DataError naming it (and the line of an invalid
    byte) otherwise."""
    data = read_limited(path, limit, label)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DataError(f"{label}: line {line}: not valid UTF-8 ({error.reason})") from None


def parse_json(text: str, label: str, *, finite: bool = True, one_line: bool = False) -> Any:
    """The JSON value of `text`; DataError `LABEL: line L, column C: not valid JSON (...)` otherwise
    (`one_line`, for a JSON line of a data file: `LABEL: not valid JSON (... at column C)`).

    Nesting too deep for the parser, and an integer too long to convert, are DataErrors too. With
    `finite`, a NaN or infinite number (`NaN`, `Infinity`, `1e999`, which Python's json reads and JSON
    does not allow) is refused naming its key: every file lwap writes has null there instead.
    """
    try:
        value = json.loads(text, parse_constant=float)
    except json.JSONDecodeError as error:
        if one_line:
            raise DataError(f"{label}: not valid JSON ({error.msg} at column {error.colno})") from None
        cut = " (the file ends early: truncated?)" if error.pos >= len(text.rstrip()) else ""
        where = f"line {error.lineno}, column {error.colno}"
        raise DataError(f"{label}: {where}: not valid JSON ({error.msg}){cut}") from None
    except RecursionError:
        raise DataError(f"{label}: not valid JSON (nested too deeply)") from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise DataError(f"{label}: not valid JSON ({str(error).splitlines()[0]})") from None
    if finite:
        where = nonfinite_key(value)
        if where is not None:
            key, number = where
            raise DataError(f"{label}: {key or 'the value'} is {number}, expected a finite number")
    return value


def nonfinite_key(value: Any) -> tuple[str, float] | None:
    """(dotted key, number) of the first NaN or infinite float in a JSON value, or None. Iterative: a
    value nested as deep as the parser allows must not exhaust the stack here."""
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        key, item = pending.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return key, item
        if isinstance(item, dict):
            pending += [(f"{key}.{k}" if key else str(k), v) for k, v in reversed(item.items())]
        elif isinstance(item, list):
            pending += [(f"{key}[{i}]", v) for i, v in reversed(list(enumerate(item)))]
    return None


def read_json(path: Path, label: str | None = None, *, finite: bool = True) -> Any:
    """The JSON value in `path`; DataError `FILE: line L, column C: not valid JSON (...)` otherwise.

    Every JSON file lwap reads back (cells, summaries, manifests, results, modules.json) comes through
    here: `json.loads` alone names neither the file nor, for half a file, what happened. Read with
    `read_limited` (lwap.checks.limits.JSON_FILE) and `parse_json` (finite numbers unless `finite=False`:
    transformers writes a NaN loss into trainer_state.json as `NaN`).
    """
    path = Path(path)
    label = str(path) if label is None else label
    text = _read_text(path, label, JSON_FILE)
    if not text.strip():
        raise DataError(f"{label}: file is empty, expected JSON")
    return parse_json(text, label, finite=finite)


def read_json_object(path: Path, label: str | None = None, *, finite: bool = True) -> dict[str, Any]:
    """`read_json` for a file that must hold an object (a mapping)."""
    value = read_json(path, label, finite=finite)
    if not isinstance(value, dict):
        raise DataError(f"{label or path}: expected a JSON object, got {type(value).__name__}")
    return value


def read_yaml(path: Path, label: str | None = None) -> Any:
    """The YAML value in `path` (`read_limited`, lwap.checks.limits.YAML_FILE; `parse_yaml`)."""
    path = Path(path)
    label = str(path) if label is None else label
    return parse_yaml(_read_text(path, label, YAML_FILE), label)


def read_csv_rows(path: Path, label: str | None = None) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of a CSV file with a header; DataError naming the file and line of a row that
    is malformed (a stray quote, a NUL byte) or has more or fewer fields than the header."""
    import csv
    import io

    path = Path(path)
    label = str(path) if label is None else label
    reader = csv.reader(io.StringIO(_read_text(path, label, CSV_FILE), newline=""))
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = next(reader, None)
        if header is None:
            raise DataError(f"{label}: file is empty, expected a CSV header")
        for fields in reader:
            if not fields:
                continue
            if len(fields) != len(header):
                raise DataError(
                    f"{label}: line {reader.line_num}: {len(fields)} fields, the header has {len(header)} "
                    "(truncated or damaged?)"
                )
            rows.append((reader.line_num, dict(zip(header, fields, strict=True))))
    except csv.Error as error:
        raise DataError(f"{label}: line {reader.line_num}: not valid CSV ({error})") from None
    return rows
