"""A user's own scored pairs file: two texts and a similarity score a row, scored by cosine Spearman.

What a user who has judged pairs of their own brings as a dev set (`eval.dev`) or as an `lwap eval --tasks`
path: a CSV (`.csv`, quoted as Excel/pandas write it) or TSV (`.tsv`, no quoting) with a header row (or
without one, its columns named by `eval.dev_column_names` / `--pairs-column-names`), gzipped or not, with
the columns named by `eval.dev_columns` (`sentence1, sentence2, score` by default; extra columns are
ignored). Scores may be on any scale (Spearman is rank-based); every row needs one.

Not `datasets`' CSV builder: it reads in blocks and its errors name neither the file nor the line (the
training readers in lwap.train.data say the same); the rows go through `lwap.checks.files.decoded_lines`, the
reader every text file of lwap's goes through.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

from lwap.checks.files import check_file, decoded_lines
from lwap.checks.table_files import check_width, header_indices, named_header, table_reader
from lwap.errors import DataError
from lwap.eval.sts_data import StsPairs, StsTask

PAIRS_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz")
DEFAULT_COLUMNS = ("sentence1", "sentence2", "score")


def is_pairs_file(path: Path) -> bool:
    """Whether `path`'s name says a scored pairs table (the suffixes `load_scored_pairs` reads)."""
    return path.name.lower().endswith(PAIRS_SUFFIXES)


def load_scored_pairs(
    path: str | Path,
    columns: Sequence[str] = DEFAULT_COLUMNS,
    name: str | None = None,
    columns_option: str = "eval.dev_columns",
    column_names: Sequence[str] | None = None,
    names_option: str = "eval.dev_column_names",
) -> StsTask:
    """The pairs of `path` as a one-subset STS task named `name` (default: the file's name without its
    suffixes); DataError naming the file and line of anything missing or malformed, and for a missing
    column the option that names them (`columns_option`: the config key, or `lwap eval`'s flag).
    `column_names`: a file without a header row, its columns' names in order (`names_option` says them)."""
    path = Path(path)
    if not is_pairs_file(path):
        raise DataError(
            f"{path}: a scored pairs file must be a CSV or TSV with a header ({', '.join(columns)}); "
            f"expected a name ending in {', '.join(PAIRS_SUFFIXES)}"
        )
    check_file(path)
    pairs = _read_rows(path, tuple(columns), (columns_option, names_option), column_names)
    return StsTask(name or pairs_name(path), {"pairs": pairs}, "file", [str(path)])


def pairs_name(path: Path) -> str:
    """The file's name without its pairs suffix: `my-dev.tsv.gz` -> `my-dev`."""
    lowered = path.name.lower()
    suffix = next((s for s in sorted(PAIRS_SUFFIXES, key=len, reverse=True) if lowered.endswith(s)), "")
    return path.name[: len(path.name) - len(suffix)] or path.name


def _read_rows(
    path: Path, columns: tuple[str, ...], options: tuple[str, str], column_names: Sequence[str] | None
) -> StsPairs:
    """The rows; `options`: the option naming the three columns, and the one naming a headerless file's."""
    columns_option, names_option = options
    tsv = ".tsv" in path.name.lower()
    kind = "TSV" if tsv else "CSV"
    lines = (line.removeprefix("\ufeff") if n == 1 else line for n, line in decoded_lines(path))
    reader = table_reader(lines, tsv)
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    try:
        if column_names is None:
            no_header = f"a file whose first line is data, not a header: name its columns with {names_option}"
            hint = f" (name yours with {columns_option}; {no_header})"
            header, named_by = header_indices(reader, path, kind, columns, lambda _: hint), "the header"
        else:
            hint = f" (name yours with {columns_option})"
            header = named_header(path, list(column_names), names_option, columns, lambda _: hint)
            named_by = names_option
        first, second, score_at = (header.index(c) for c in columns)
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if not row:
                continue
            check_width(row, header, kind, where, named_by)
            text = row[score_at].strip()
            try:
                score = float(text)
            except ValueError:
                raise DataError(f"{where}: score {text!r} ({columns[2]}) is not a number") from None
            if not math.isfinite(score):
                raise DataError(f"{where}: score {text!r} ({columns[2]}) is not a finite number")
            s1.append(" ".join(row[first].split()))
            s2.append(" ".join(row[second].split()))
            scores.append(score)
    except csv.Error as error:
        raise DataError(f"{path}:{reader.line_num}: malformed {kind} ({error})") from None
    if len(scores) < 2:
        raise DataError(f"{path}: {len(scores)} scored pairs; a Spearman correlation needs at least 2")
    if len(set(scores)) < 2:
        raise DataError(f"{path}: every pair has the same score ({scores[0]:g}): no ranking to correlate")
    return StsPairs(s1, s2, scores)
