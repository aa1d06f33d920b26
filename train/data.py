"""Training data → a memory-mapped `datasets.Dataset` whose columns are exactly what the loss reads.

- unsup_simcse: one column `text` (the loss encodes every sentence twice). Source: a text file with one
  sentence a line (`.txt`, `.txt.gz`; blank lines are skipped), a CSV/TSV column, or a hub dataset column.
- sup_simcse: columns `anchor, positive[, negative]` (SimCSE's `sent0, sent1, hard_neg`). Source: a CSV
  (`.csv[.gz]`, quoted as Excel/pandas write it) or TSV (`.tsv[.gz]`, no quoting) with a header row, or a
  hub dataset. Extra columns (e.g. `split`) are ignored.

An empty text in a CSV/TSV column or a hub dataset column (empty, only whitespace, or null) becomes
`EMPTY_TEXT`, a single space, as SimCSE's train.py does for None fields ("Avoid 'None' fields", lines
412-425 of princeton-nlp/SimCSE@49fa580): the example trains, [CLS] [SEP] only; `lwap train` says how
many there were. A blank line of a text file is no example at all and is skipped.

Local files are read once, line by line, into an Arrow file in the `datasets` cache
(`Dataset.from_generator`: memory-mapped, so 1M sentences are not held in RAM), validated on the way:
every problem raises DataError naming the file and line before any training starts. The cache key
includes the file's size and modification time, so an edited file is read again.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lwap.data_sources import hub_offline, training_file
from lwap.errors import DataError
from lwap.files import check_file, decoded_lines
from lwap.paths import DATA_DIR_VARIABLE
from lwap.train.config import DataConfig

TEXT_SUFFIXES = (".txt", ".txt.gz", ".text")
EMPTY_TEXT = " "  # what an empty text becomes: SimCSE's train.py replaces None by " " (see the docstring)
TABLE_DELIMITERS = {".csv": ",", ".csv.gz": ",", ".tsv": "\t", ".tsv.gz": "\t"}


def load_train_dataset(data: DataConfig, objective: str) -> Any:
    """The training `datasets.Dataset` for `objective` ("unsup_simcse" or "sup_simcse")."""
    columns, names = _wanted_columns(data, objective)
    if _is_local(data.train):
        path = training_file(data.train, data.max_examples)  # the mirror, lwap's sample or the hub
        return _local_dataset(path, data, objective, columns, names)
    return _hub_dataset(data, columns, names)


def _wanted_columns(data: DataConfig, objective: str) -> tuple[list[str], list[str]]:
    """(source column names, dataset column names) in the order the loss reads them."""
    if objective == "unsup_simcse":
        return [data.text_column], ["text"]
    columns = [data.anchor_column, data.positive_column]
    names = ["anchor", "positive"]
    if data.hard_negative_column is not None:
        columns.append(data.hard_negative_column)
        names.append("negative")
    return columns, names


def _is_local(value: str) -> bool:
    """A path (existing, with a data-file suffix, or written as a path) rather than a hub dataset id."""
    lowered = value.lower()
    return (
        Path(os.path.expandvars(value)).expanduser().exists()
        or value.startswith(("/", ".", "~", "$"))
        or lowered.endswith(TEXT_SUFFIXES + tuple(TABLE_DELIMITERS))
    )


def _table_delimiter(path: Path) -> str | None:
    name = path.name.lower()
    return next((d for suffix, d in TABLE_DELIMITERS.items() if name.endswith(suffix)), None)


def _local_dataset(path: Path, data: DataConfig, objective: str, columns: list[str], names: list[str]) -> Any:
    import datasets
    from datasets.exceptions import DatasetGenerationError

    check_file(path, key="data.train")
    stat = path.stat()
    delimiter = _table_delimiter(path)
    if delimiter is None and objective == "sup_simcse":
        raise DataError(
            f"{path}: sup_simcse reads a CSV/TSV with a header ({', '.join(columns)}); "
            f"expected a name ending in {', '.join(TABLE_DELIMITERS)}"
        )
    kwargs = {
        "path": str(path),
        "max_examples": data.max_examples,
        "stamp": f"{stat.st_size}-{stat.st_mtime_ns}",  # part of the cache key: re-read an edited file
    }
    if delimiter is None:
        generator = _text_rows
    else:
        generator = _table_rows
        # tuples, not lists: `from_generator` would split list-valued arguments into shards
        kwargs.update(delimiter=delimiter, columns=tuple(columns), names=tuple(names))
    features = datasets.Features({name: datasets.Value("string") for name in names})
    try:
        return datasets.Dataset.from_generator(generator, gen_kwargs=kwargs, features=features)
    except DatasetGenerationError as error:
        if isinstance(error.__cause__, DataError):
            raise error.__cause__ from None
        raise


def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Decoded lines with their endings (`decoded_lines`), a byte-order mark dropped from the first."""
    for number, line in decoded_lines(path):
        yield number, line.removeprefix("\ufeff") if number == 1 else line


def _text_rows(path: str, max_examples: int | None, stamp: str) -> Iterator[dict[str, str]]:
    count = 0
    for _, line in _numbered_lines(Path(path)):
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        yield {"text": text}
        count += 1
        if max_examples is not None and count >= max_examples:
            return
    if count == 0:
        raise DataError(f"{path}: no sentences (the file has only blank lines)")


def _table_rows(
    path: str,
    max_examples: int | None,
    stamp: str,
    delimiter: str,
    columns: tuple[str, ...],
    names: tuple[str, ...],
) -> Iterator[dict[str, str]]:
    source = Path(path)
    kind = "CSV" if delimiter == "," else "TSV"
    quoting = csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE
    reader = csv.reader((line for _, line in _numbered_lines(source)), delimiter=delimiter, quoting=quoting)
    try:
        header = next(reader, None)
        if header is None or not any(h.strip() for h in header):
            raise DataError(f"{path}: no header row (expected {kind} columns {', '.join(columns)})")
        header = [h.strip() for h in header]
        missing = [c for c in columns if c not in header]
        if missing:
            hint = ""
            if columns[-1] in missing and len(columns) == 3 and len(missing) == 1:
                hint = "; for pairs without hard negatives set data.hard_negative_column: null"
            raise DataError(
                f"{path}: missing column(s) {', '.join(repr(m) for m in missing)}; "
                f"the header has {', '.join(repr(h) for h in header)}{hint}"
            )
        indices = [header.index(c) for c in columns]
        count = 0
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if not row:
                continue  # blank line
            if len(row) != len(header):
                raise DataError(
                    f"{where}: expected {len(header)} {kind} fields as in the header, found {len(row)}"
                    + (" (wrong delimiter?)" if len(row) == 1 else "")
                )
            values = [row[i] if row[i].strip() else EMPTY_TEXT for i in indices]  # as SimCSE: see above
            yield dict(zip(names, values, strict=True))
            count += 1
            if max_examples is not None and count >= max_examples:
                return
    except csv.Error as error:
        raise DataError(f"{path}:{reader.line_num}: malformed {kind} ({error})") from None
    if count == 0:
        raise DataError(f"{path}: has a header but no data rows")


def _hub_dataset(data: DataConfig, columns: list[str], names: list[str]) -> Any:
    import datasets
    import pyarrow.compute as pc

    try:
        dataset = datasets.load_dataset(
            data.train, data.hub_config, data_files=data.hub_data_files, split=data.hub_split
        )
    except Exception as error:  # datasets raises many types here (offline, not found, bad config/split)
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if hub_offline():
            raise DataError(
                f"data.train {data.train!r} is a hub dataset and the Hugging Face hub is offline "
                f"(HF_HUB_OFFLINE=1) with no cached copy: go online (unset HF_HUB_OFFLINE), or train on a "
                f"local file with --set data.train=PATH, e.g. the data mirror's stand-in that the config's "
                f"header names (under {DATA_DIR_VARIABLE})"
            ) from None
        raise DataError(
            f"data.train {data.train!r} is not a local file, and loading it as a hub dataset failed: {first}"
        ) from None
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise DataError(
            f"hub dataset {data.train!r}: missing column(s) {missing}; it has {dataset.column_names}"
        )
    dataset = dataset.select_columns(columns)
    dataset = dataset.rename_columns({c: n for c, n in zip(columns, names, strict=True) if c != n})
    if data.max_examples is not None:
        dataset = dataset.select(range(min(data.max_examples, len(dataset))))
    if len(dataset) == 0:
        raise DataError(f"hub dataset {data.train!r} split {data.hub_split!r} is empty")
    has_blank = False
    for batch in dataset.with_format("arrow").iter(batch_size=10_000):  # streamed: the data stays on disk
        for column, name in zip(columns, names, strict=True):
            values = batch.column(name)
            if values.type not in ("string", "large_string"):
                raise DataError(
                    f"hub dataset {data.train!r}: column {column!r} holds {values.type}, expected text"
                )
            blank = pc.or_kleene(pc.is_null(values), pc.equal(pc.utf8_trim_whitespace(values), ""))
            has_blank = has_blank or bool(pc.any(blank).as_py())
    if has_blank:  # as SimCSE: see the module docstring

        def fill(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
            return {n: [v if v is not None and v.strip() else EMPTY_TEXT for v in batch[n]] for n in names}

        dataset = dataset.map(fill, batched=True, desc="empty texts → ' '")
    return dataset


def empty_texts(dataset: Any) -> int:
    """How many texts of `dataset` are `EMPTY_TEXT` (empty in the source, replaced as SimCSE does)."""
    import pyarrow.compute as pc

    table = dataset.with_format("arrow")[:]
    return sum(
        int(pc.sum(pc.equal(table.column(name), EMPTY_TEXT)).as_py() or 0) for name in table.column_names
    )
