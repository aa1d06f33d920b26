"""Streamed readers of the line-based training formats: text, CSV/TSV, JSON lines and JSON arrays.

Each yields one example at a time as {dataset column: text}, so `Dataset.from_generator` writes them to
a memory-mapped Arrow file without holding the file in RAM, and raises a one-line DataError naming the
file and the line (and, for a JSON array, the row) of the first fault. Lines come from
`lwap.checks.files.decoded_lines` (UTF-8 checked line by line, gzip on the fly, its line checks).

Why lwap's own readers and not `datasets`' text/CSV/JSON builders: those read in blocks (pandas for CSV,
pyarrow for JSON), so their errors name neither the file nor the line; pandas reads the texts "NA" or
"null" as missing values; pyarrow infers each column's type, so a number where a text belongs is
silently a number column (or a cast error far from its line); and for a `.json` that is not JSON lines
the builder parses the whole document in memory, with no bound on nesting.

Values (see lwap.train.data for the SimCSE rule): an empty or blank text, or a JSON null, becomes
`EMPTY_TEXT`; a JSON value that is not a string (number, bool, list, object) is refused. A scored pairs
file's score column (`score`, lwap.train.scored_data) is a number instead, parsed and checked where its
line is known.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import gzip
import json
import re
import zlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from lwap.checks.files import decoded_lines, open_regular
from lwap.checks.limits import LINE
from lwap.checks.table_files import check_width, header_indices, named_header, table_reader
from lwap.errors import DataError
from lwap.train.scored_data import SCORE, ScoreColumn

EMPTY_TEXT = " "  # what an empty text becomes: SimCSE's train.py replaces None by " " (lwap.train.data)
NO_HEADER = " (a file whose first line is data, not a header: name its columns with data.column_names)"
MAX_JSON_DEPTH = 64  # an example is an object of texts (depth 1); deeper nesting is refused, not recursed
JSON_CHUNK = 1 << 20  # a JSON array is read this many bytes at a time
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_OPENERS = re.compile(r"[\[\]{}]")
_WHITE_SPACE = re.compile(r"[ \t\r\n]*")  # JSON's white space
_DECODER = json.JSONDecoder()


def limited(rows: Iterator[dict[str, str]], path: str, max_examples: int | None) -> Iterator[dict[str, str]]:
    """`rows`, stopping after `max_examples`; DataError for a file that yields none."""
    count = 0
    for row in rows:
        yield row
        count += 1
        if max_examples is not None and count >= max_examples:
            return
    if count == 0:
        raise DataError(f"{path}: no examples (the file has no rows, only blank lines or a header)")


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Decoded lines with their endings (`decoded_lines`), a byte-order mark dropped from the first."""
    for number, line in decoded_lines(path):
        yield number, line.removeprefix("\ufeff") if number == 1 else line


def text_rows(path: Path) -> Iterator[dict[str, str]]:
    """A sentence a line; blank lines are no examples."""
    for _, line in numbered_lines(path):
        text = line.rstrip("\r\n")
        if text.strip():
            yield {"text": text}


def table_rows(
    path: Path,
    delimiter: str,
    columns: tuple[str, ...],
    names: tuple[str, ...],
    score: ScoreColumn | None = None,
    column_names: tuple[str, ...] | None = None,
) -> Iterator[dict[str, Any]]:
    """CSV (quoted as Excel/pandas write it) or TSV (no quoting) with a header row, or without one when
    `column_names` (data.column_names) names the columns; columns by name; with `score`, the column named
    `score` is a number (scored pairs)."""
    kind = "CSV" if delimiter == "," else "TSV"
    reader = table_reader((line for _, line in numbered_lines(path)), tsv=delimiter != ",")
    try:
        hint = partial(pairs_hint, columns=columns, names=names)
        if column_names is None:
            header = header_indices(reader, path, kind, columns, lambda missing: hint(missing) + NO_HEADER)
            named_by = "the header"
        else:
            named_by = "data.column_names"
            header = named_header(path, list(column_names), named_by, columns, hint)
        indices = [header.index(c) for c in columns]
        for row in reader:
            if not row:
                continue  # blank line
            where = f"{path}:{reader.line_num}"
            check_width(row, header, kind, where, named_by)
            example = {
                n: row[i] if row[i].strip() else EMPTY_TEXT for n, i in zip(names, indices, strict=True)
            }
            if score is not None:
                example[SCORE] = score.parse(row[indices[names.index(SCORE)]], where)
            yield example
    except csv.Error as error:
        raise DataError(f"{path}:{reader.line_num}: malformed {kind} ({error})") from None


def pairs_hint(missing: list[str], columns: tuple[str, ...], names: tuple[str, ...]) -> str:
    """For a file without its hard-negative column(s): how to train on its pairs instead."""
    negatives = {c for c, n in zip(columns, names, strict=True) if n.startswith("negative")}
    if not missing or not set(missing) <= negatives:
        return ""
    key = "data.hard_negative_column" if "negative" in names else "data.hard_negative_columns"
    return f"; for pairs without hard negatives set {key}: null"


# --- JSON ------------------------------------------------------------------------------------------------


def json_kind(value: Any) -> str:
    """A JSON value's kind in JSON's words: object, array, string, number, true/false, null."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    return "null" if value is None else "a string"


def object_row(
    value: Any, where: str, columns: tuple[str, ...], names: tuple[str, ...], score: ScoreColumn | None = None
) -> dict[str, Any]:
    """The example in one JSON object, by column name (with `score`: `score` a number); DataError naming
    `where` for anything else."""
    if not isinstance(value, dict):
        raise DataError(
            f"{where}: expected a JSON object (an example with its texts by name), found {json_kind(value)}"
        )
    missing = [c for c in columns if c not in value]
    if missing:
        keys = list(value)
        shown = ", ".join(repr(k) for k in keys[:10]) + (", ..." if len(keys) > 10 else "")
        raise DataError(
            f"{where}: no key {', '.join(repr(m) for m in missing)}; the object has {shown or 'no keys'}"
            f"{pairs_hint(missing, columns, names)}"
        )
    row: dict[str, Any] = {}
    for column, name in zip(columns, names, strict=True):
        text = value[column]
        if score is not None and name == SCORE:
            row[name] = score.parse(text, where)
            continue
        if text is not None and not isinstance(text, str):
            raise DataError(f"{where}: {column!r} is {json_kind(text)}, expected a string (a text)")
        row[name] = text if text is not None and text.strip() else EMPTY_TEXT
    return row


def _too_deep(text: str) -> bool:
    """Whether the JSON `text` nests arrays/objects deeper than MAX_JSON_DEPTH (brackets in strings not
    counted); cheap for the usual line, which has fewer brackets than the limit in all."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for bracket in _OPENERS.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


def _nested_too_deeply(where: str) -> DataError:
    return DataError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels; expected an object of texts")


def json_lines_rows(
    path: Path,
    columns: tuple[str, ...],
    names: tuple[str, ...],
    *,
    in_json_file: bool = False,
    score: ScoreColumn | None = None,
) -> Iterator[dict[str, Any]]:
    """JSON lines: one object a line (blank lines skipped). `in_json_file`: a `.json` holding JSON lines,
    as `datasets`' `to_json` writes them; its fault says what a .json may hold."""
    for number, line in numbered_lines(path):
        text = line.strip()
        if not text:
            continue
        where = f"{path}:{number}"
        if _too_deep(text):
            raise _nested_too_deeply(where)
        try:
            value = json.loads(text)
        except RecursionError:
            raise _nested_too_deeply(where) from None
        except ValueError as error:  # JSONDecodeError, or an integer too long for int()
            decode = isinstance(error, json.JSONDecodeError)
            detail = f"{error.msg} at column {error.colno}" if decode else str(error)
            hint = " (a .json file holds an array of objects or one object a line)" if in_json_file else ""
            raise DataError(f"{where}: not valid JSON ({detail}){hint}") from None
        yield object_row(value, where, columns, names, score)


@contextlib.contextmanager
def _open_binary(path: Path) -> Iterator[Any]:
    """`path` through lwap's one way of opening what it reads (a regular file, bounded by no size: data
    files are streamed), decompressed on the fly for `.gz`."""
    with open_regular(path) as raw:
        if path.name.lower().endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="rb") as handle:
                yield handle
        else:
            yield raw


def starts_an_array(path: Path) -> bool:
    """Whether the first character of `path` (after a byte-order mark and white space) is `[`; False for
    a file that cannot be read (the JSON lines reader then names the fault)."""
    try:
        with _open_binary(path) as handle:
            while chunk := handle.read(4096):
                rest = chunk.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
                if rest:
                    return rest.startswith("[")
    except (EOFError, OSError, zlib.error):
        pass
    return False


class _JsonArrayReader:
    """The elements of one top-level JSON array, read JSON_CHUNK bytes at a time (Python's json has no
    streaming parser; each element is decoded with `raw_decode` once the buffer holds all of it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.opened = _open_binary(path)
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.buffer = ""
        self.pos = 0  # next character of `buffer` to read
        self.line = 1  # the line `pos` is on
        self.eof = False

    def _more(self) -> bool:
        """Read the next chunk into the buffer; False at the end of the file."""
        if self.eof:
            return False
        try:
            chunk = self.handle.read(JSON_CHUNK)
            text = self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as error:
            raise DataError(f"{self.path}: not valid UTF-8 ({error.reason}) after line {self.line}") from None
        except (EOFError, OSError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
            raise DataError(f"{self.path}: truncated or corrupt gzip file ({error})") from None
        self.eof = not chunk
        self.buffer += text.removeprefix("\ufeff") if self.line == 1 and not self.buffer else text
        return not self.eof or bool(text)

    def _advance(self, to: int) -> None:
        self.line += self.buffer.count("\n", self.pos, to)
        self.pos = to

    def _next_character(self) -> str:
        """The next character that is not white space ('' at the end of the file); not consumed."""
        while True:
            self._advance(_WHITE_SPACE.match(self.buffer, self.pos).end())
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self._more():
                return ""

    def _element(self, where: str, row: int) -> Any:
        """Decode the element at `pos`, reading on until it is complete."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buffer, self.pos)
            except RecursionError:
                raise _nested_too_deeply(where) from None
            except ValueError as error:
                if len(self.buffer) - self.pos < LINE.value() and self._more():
                    continue  # the element may go on in the next chunk
                if not self.eof:
                    raise DataError(
                        f"{where}: no complete JSON value in {LINE.value():,} bytes, the line limit (a row "
                        f"that long, or not valid JSON; set {LINE.variable} to raise it)"
                    ) from None
                if not isinstance(error, json.JSONDecodeError):  # an integer too long for int()
                    raise DataError(f"{where}: not valid JSON ({error})") from None
                if error.msg.startswith("Unterminated") or error.pos >= len(self.buffer.rstrip()):
                    raise DataError(f"{where}: the file ends inside this row (truncated?)") from None
                line = self.line + self.buffer.count("\n", self.pos, error.pos)
                raise DataError(f"{self.path}:{line}: not valid JSON ({error.msg}) in row {row}") from None
            if end == len(self.buffer) and self._more():
                continue  # a number may go on in the next chunk
            if _too_deep(self.buffer[self.pos : end]):
                raise _nested_too_deeply(where)
            self._advance(end)
            return value

    def elements(self) -> Iterator[tuple[str, Any]]:
        """(where: file, row and line, element) for each element of the array."""
        with self.opened as self.handle:
            self._next_character()
            self._advance(self.pos + 1)  # the opening `[` (starts_an_array checked it)
            row = 0
            if self._next_character() == "]":
                self._advance(self.pos + 1)
            else:
                while True:
                    if self.pos > JSON_CHUNK:  # drop what has been read
                        self.buffer, self.pos = self.buffer[self.pos :], 0
                    row += 1
                    first = self._next_character()
                    where = f"{self.path}: row {row} (line {self.line})"
                    if first == "":
                        raise DataError(f"{where}: the file ends inside the array (truncated?)")
                    yield where, self._element(where, row)
                    after = self._next_character()
                    self._advance(self.pos + 1)
                    if after == "]":
                        break
                    if after != ",":
                        found = repr(after) if after else "the end of the file (truncated?)"
                        raise DataError(
                            f"{self.path}:{self.line}: expected ',' or ']' after row {row}, found {found}"
                        )
            if self._next_character() != "":
                raise DataError(f"{self.path}:{self.line}: text after the end of the JSON array")


def json_array_rows(
    path: Path, columns: tuple[str, ...], names: tuple[str, ...], score: ScoreColumn | None = None
) -> Iterator[dict[str, Any]]:
    """A JSON array of objects, one example each."""
    for where, value in _JsonArrayReader(path).elements():
        yield object_row(value, where, columns, names, score)
