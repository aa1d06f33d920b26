"""Line-by-line reading of the evaluation data files, with errors that name the file and the line.

Every reader of `lwap.eval` goes through here, so the bad-input cases (missing file, directory, empty
file, not UTF-8, truncated gzip, wrong delimiter, too few fields, header or not) behave the same for
STS, SICK and BEIR files. Lines are split on LF only (a CRLF's `\\r` is dropped), never with
`str.splitlines`, which would also break lines at form feeds and Unicode separators inside sentences.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from lwap.errors import DataError

_HEADER_FIELD = re.compile(r"[A-Za-z][A-Za-z0-9_\- ]*")
_OTHER_DELIMITERS = (",", ";", "|")


def check_file(path: Path) -> None:
    """DataError unless `path` is an existing, non-empty regular file."""
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a file")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: file is empty")


def decoded_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line with its ending) of a UTF-8 file, `.gz` decompressed on the fly.

    The one place where data files are decoded, for training (`lwap.train.data`, whose CSV reader needs the
    line endings) and evaluation alike: invalid UTF-8 and broken gzip streams are DataErrors naming the file
    (and line)."""
    number = 0
    try:
        with gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise DataError(
                        f"{path}:{number}: not valid UTF-8 ({error.reason} at byte {error.start} of the line)"
                    ) from None
                yield number, line
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise DataError(
            f"{path}: truncated or corrupt gzip file (read {number} complete lines; {error})"
        ) from None


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without its line ending) for each line of a checked, non-empty UTF-8 file."""
    path = Path(path)
    check_file(path)
    number = 0
    for number, line in decoded_lines(path):
        yield number, line.removesuffix("\n").removesuffix("\r")
    if number == 0:
        raise DataError(f"{path}: file is empty")


def split_fields(line: str, where: str, minimum: int, names: str) -> list[str]:
    """Tab-separated fields of `line`; DataError naming `where` if there are fewer than `minimum`."""
    fields = line.split("\t")
    if len(fields) < minimum:
        hint = ""
        if len(fields) == 1 and any(d in line for d in _OTHER_DELIMITERS):
            hint = "; no tab found: the file must be tab-separated"
        raise DataError(
            f"{where}: expected {minimum} tab-separated fields ({names}), found {len(fields)}{hint}"
        )
    return fields


def is_header(field: str) -> bool:
    """Whether a first-line field that should hold a number is a column name ("score", "query-id")."""
    text = field.strip()
    if not _HEADER_FIELD.fullmatch(text):
        return False
    try:
        float(text)  # "nan", "inf" are numbers, not column names
    except ValueError:
        return True
    return False


def parse_score(text: str, where: str, low: float = 0.0, high: float = 5.0) -> float:
    """A gold similarity score; DataError naming `where` if it is not a number in [low, high]."""
    try:
        score = float(text)
    except ValueError:
        raise DataError(f"{where}: score {text!r} is not a number") from None
    if not low <= score <= high:
        raise DataError(f"{where}: score {score} is outside {low:g}–{high:g}")
    return score
