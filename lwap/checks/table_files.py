"""CSV and TSV files read by column name: the header check and the row-width check shared by every such
reader (training rows in lwap.train.data_rows, scored pairs in lwap.eval.pairs_data), so that a missing
column or a short row is said the same way whichever command reads the file."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lwap.errors import DataError


def table_reader(lines: Iterable[str], tsv: bool) -> Any:
    """A csv reader: CSV quoted as Excel and pandas write it, TSV with no quoting (a quote is text)."""
    quoting = csv.QUOTE_NONE if tsv else csv.QUOTE_MINIMAL
    return csv.reader(lines, delimiter="\t" if tsv else ",", quoting=quoting)


def header_indices(
    reader: Any, path: Path, kind: str, columns: tuple[str, ...], hint: Callable[[list[str]], str]
) -> list[str]:
    """The header row (stripped), refused in one line when empty or missing one of `columns`; `hint(missing)`
    ends the missing-column line (which key names the columns, or how to do without them)."""
    header = next(reader, None)
    if header is None or not any(h.strip() for h in header):
        raise DataError(f"{path}: no header row (expected {kind} columns {', '.join(columns)})")
    return named_header(path, [h.strip() for h in header], "the header", columns, hint)


def named_header(
    path: Path, names: list[str], option: str, columns: tuple[str, ...], hint: Callable[[list[str]], str]
) -> list[str]:
    """`names` as a file's header (the header row's, or those `option` gave a file without one); refused in
    one line when one of `columns` is not among them, `hint(missing)` ending the line."""
    missing = [c for c in columns if c not in names]
    if missing:
        raise DataError(
            f"{path}: missing column(s) {', '.join(repr(m) for m in missing)}; {option} has "
            f"{', '.join(repr(n) for n in names)}{hint(missing)}"
        )
    return names


def column_names_problem(names: list[str] | tuple[str, ...] | None) -> str | None:
    """What is wrong with the names given for a headerless file's columns (none, an empty one, one twice),
    or None (also for no names: the file has a header row): the one rule behind data.column_names,
    eval.dev_column_names and --pairs-column-names."""
    if names is None:
        return None
    if not names or not all(name.strip() for name in names):
        return "must list the file's columns in order (names, none empty)"
    if len(set(names)) != len(names):
        return "names a column twice"
    return None


def check_width(
    row: list[str], header: list[str], kind: str, where: str, named_by: str = "the header"
) -> None:
    """A row with as many fields as the header (or the names given for a file without one), or one line
    naming the file and line."""
    if len(row) != len(header):
        raise DataError(
            f"{where}: expected {len(header)} {kind} fields as in {named_by}, found {len(row)}"
            + (" (wrong delimiter?)" if len(row) == 1 else "")
        )
