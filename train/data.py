"""Training data → a memory-mapped `datasets.Dataset` whose columns are exactly what the loss reads.

- unsup_simcse: one column `text` (the loss encodes every sentence twice), from a text file (a sentence
  a line; blank lines are skipped) or the `data.text_column` of any table below.
- sup_simcse: columns `anchor, positive[, negative | negative_1, ..., negative_k]` (SimCSE's `sent0, sent1,
  hard_neg`), from `data.anchor_column`, `data.positive_column` and `data.hard_negative_column` (or the
  list `data.hard_negative_columns`) of any table. Other columns (e.g. `split`) are ignored.
- scored_pairs: columns `sentence1, sentence2, score` from `data.scored_columns` of any table, the score
  a number mapped to [0, 1] from `data.score_range` or the data's min and max (lwap.train.scored_data).

What `data.train` may name, by suffix (`.gz` of the line-based ones is read on the fly):

| suffix | format | read by |
| --- | --- | --- |
| `.txt`, `.text` (+`.gz`) | a sentence a line (unsup_simcse only) | lwap (data_rows.text_rows) |
| `.csv` / `.tsv` (+`.gz`) | a header row; CSV quoted as Excel/pandas write it, TSV unquoted | lwap |
| `.jsonl`, `.ndjson` (+`.gz`) | JSON lines: an object a line | lwap |
| `.json` (+`.gz`) | an array of objects, or JSON lines (what `Dataset.to_json` writes) | lwap |
| `.parquet` | Parquet (compressed inside: no `.gz`) | `datasets`' parquet builder |
| a folder | what `Dataset.save_to_disk` / `DatasetDict.save_to_disk` wrote | `datasets.load_from_disk` |
| anything else that is no path | a Hugging Face hub dataset id | `datasets.load_dataset` |

Any other suffix is refused (a file is never guessed to be text). Why the line-based formats have lwap's
own streamed readers rather than `datasets`' builders: lwap.train.data_rows. Every fault is one DataError
naming the file, the line or row, and what was expected, before any training starts.

An empty text (empty, only whitespace, or null) in any table becomes `EMPTY_TEXT`, a single space, as
SimCSE's train.py does for None fields ("Avoid 'None' fields", lines 412-425 of
princeton-nlp/SimCSE@49fa580): the example trains, [CLS] [SEP] only; `lwap train` says how many there
were. A blank line of a text file is no example at all and is skipped. A value that is not text (a JSON
number, a Parquet integer column) is refused.

Files are read once into an Arrow file in the `datasets` cache (memory-mapped, so 1M sentences are not
held in RAM): the line-based formats by `Dataset.from_generator`, whose cache key includes the file's
size and modification time (so an edited file is read again); Parquet by its builder under a config
name holding the same stamp. A damaged entry there is rebuilt once, and a full or unwritable cache folder
is one line naming it: lwap.train.data_cache.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lwap.checks.files import check_file
from lwap.data_sources import hub_offline, training_file
from lwap.errors import DataError, LwapError
from lwap.library_output import datasets_bars_off
from lwap.paths import DATA_DIR_VARIABLE, expand_path
from lwap.train import data_rows
from lwap.train.config import DataConfig
from lwap.train.data_cache import through_cache
from lwap.train.data_rows import EMPTY_TEXT
from lwap.train.scored_data import SCORE, ScoreColumn, checked_arrow_scores, normalised

# `datasets` and pyarrow are imported in the functions that read data: `lwap card` and `lwap mine` import
# this module for its rules on paths and formats without reading any (datasets takes a second to import)

__all__ = ["EMPTY_TEXT", "FORMATS", "empty_texts", "file_format", "load_train_dataset"]

FORMATS = {
    ".txt": "text",
    ".text": "text",
    ".csv": "csv",
    ".tsv": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
}
GZIPPED = ("text", "csv", "tsv", "jsonl", "json")  # read through gzip when the name ends in .gz
DELIMITERS = {"csv": ",", "tsv": "\t"}
SAVED_DATASET_FILES = ("state.json", "dataset_dict.json")  # what save_to_disk writes into its folder


def load_train_dataset(data: DataConfig, objective: str) -> Any:
    """The training `datasets.Dataset` for `objective` ("unsup_simcse", "sup_simcse" or "scored_pairs").
    `datasets`' progress bars are off meanwhile: a fault is one line, no bar before it
    (lwap.library_output)."""
    with datasets_bars_off():
        dataset, label = _loaded(data, objective)
        if objective != "scored_pairs":
            return dataset
        bounds = _bounds(data)
        checked_arrow_scores(dataset, label, data.scored_columns[2], bounds)  # the line readers: their own
        return normalised(dataset, label, bounds)


def _bounds(data: DataConfig) -> tuple[float, float] | None:
    return None if data.score_range is None else (float(data.score_range[0]), float(data.score_range[1]))


def _loaded(data: DataConfig, objective: str) -> tuple[Any, str]:
    """The dataset of `data.train` with the loss's columns, and how errors name its source."""
    columns, names = _wanted_columns(data, objective)
    if not _is_local(data.train):
        _no_column_names(data, f"hub dataset {data.train!r}")
        return _hub_dataset(data, columns, names), f"hub dataset {data.train!r}"
    path = training_file(data.train, data.max_examples)  # the mirror, lwap's sample or the hub
    if path.is_dir():
        _no_column_names(data, f"{path} (a save_to_disk folder)")
        return _saved_dataset(path, data, columns, names), str(path)
    check_file(path, key="data.train")
    fmt = file_format(path)
    if fmt is None:
        raise DataError(f"{path}: unknown kind of data file (data.train); expected {_known_suffixes()}")
    if fmt not in DELIMITERS:
        _no_column_names(data, f"{path} ({fmt})")
    if fmt == "text" and objective != "unsup_simcse":
        raise DataError(
            f"{path}: {objective} reads a table with columns ({', '.join(columns)}): CSV/TSV, JSON lines, "
            f"JSON, Parquet or a save_to_disk folder; a text file has one sentence a line"
        )
    if fmt == "parquet":
        return _parquet_dataset(path, data, columns, names), str(path)
    return _streamed_dataset(path, fmt, data, columns, names), str(path)


def _no_column_names(data: DataConfig, source: str) -> None:
    """data.column_names names a headerless CSV/TSV's columns; every other source names its own."""
    if data.column_names is not None:
        raise DataError(
            f"data.column_names is for a CSV/TSV file without a header row; {source} names its own "
            "columns: set data.column_names: null"
        )


def _wanted_columns(data: DataConfig, objective: str) -> tuple[list[str], list[str]]:
    """(source column names, dataset column names) in the order the loss reads them."""
    if objective == "unsup_simcse":
        return [data.text_column], ["text"]
    if objective == "scored_pairs":
        return list(data.scored_columns), ["sentence1", "sentence2", SCORE]
    negatives = data.negative_columns()
    names = ["negative"] if len(negatives) == 1 else [f"negative_{i}" for i in range(1, len(negatives) + 1)]
    return [data.anchor_column, data.positive_column, *negatives], ["anchor", "positive", *names]


def file_format(path: Path) -> str | None:
    """The format of a data file by its name's suffix (FORMATS), None for an unknown one."""
    name = path.name.lower()
    gzipped = name.endswith(".gz")
    fmt = FORMATS.get(os.path.splitext(name.removesuffix(".gz"))[1])
    return None if gzipped and fmt not in GZIPPED else fmt


def _known_suffixes() -> str:
    plain = ", ".join(FORMATS)
    return f"one of {plain} (the line-based ones also gzipped, .gz) or a datasets save_to_disk folder"


def _is_local(value: str) -> bool:
    """A path (existing, with a data-file suffix, or written as a path) rather than a hub dataset id."""
    lowered = value.lower().removesuffix(".gz")
    return (
        expand_path(value).exists()
        or value.startswith(("/", ".", "~", "$"))
        or lowered.endswith(tuple(FORMATS))
    )


def _stamp(path: Path) -> str:
    """Part of the cache key: an edited file (new size or modification time) is read again."""
    stat = path.stat()
    return f"{stat.st_size}-{stat.st_mtime_ns}"


def _streamed_dataset(path: Path, fmt: str, data: DataConfig, columns: list[str], names: list[str]) -> Any:
    import datasets
    from datasets.exceptions import DatasetGenerationError

    kwargs = {
        "path": str(path),
        "fmt": fmt,
        "max_examples": data.max_examples,
        "stamp": _stamp(path),
        # tuples, not lists: `from_generator` would split list-valued arguments into shards
        "columns": tuple(columns),
        "names": tuple(names),
        "score_range": _bounds(data) if SCORE in names else None,
        "header": None if data.column_names is None else tuple(data.column_names),
    }
    features = datasets.Features(
        {name: datasets.Value("float64" if name == SCORE else "string") for name in names}
    )
    try:
        return through_cache(
            lambda: datasets.Dataset.from_generator(_rows, gen_kwargs=kwargs, features=features), str(path)
        )
    except DatasetGenerationError as error:
        if isinstance(error.__cause__, DataError):
            raise error.__cause__ from None
        raise


def _rows(
    path: str,
    fmt: str,
    max_examples: int | None,
    stamp: str,
    columns: tuple[str, ...],
    names: tuple[str, ...],
    score_range: tuple[float, float] | None = None,
    header: tuple[str, ...] | None = None,
) -> Iterator[dict[str, Any]]:
    """The examples of a line-based file (`from_generator` calls this; `stamp` only keys the cache; the
    score range is checked on each line, so it keys the cache too; `header`: a headerless table's column
    names, data.column_names)."""
    source = Path(path)
    score = ScoreColumn(columns[names.index(SCORE)], score_range) if SCORE in names else None
    if fmt == "text":
        rows = data_rows.text_rows(source)
    elif fmt in DELIMITERS:
        rows = data_rows.table_rows(source, DELIMITERS[fmt], columns, names, score, header)
    elif fmt == "json" and data_rows.starts_an_array(source):
        rows = data_rows.json_array_rows(source, columns, names, score)
    else:
        rows = data_rows.json_lines_rows(source, columns, names, in_json_file=fmt == "json", score=score)
    yield from data_rows.limited(rows, path, max_examples)


def _parquet_dataset(path: Path, data: DataConfig, columns: list[str], names: list[str]) -> Any:
    """A Parquet file through `datasets`' parquet builder, reading only the wanted columns; the schema
    is checked first, so a missing column or a column that is not text is one line naming the file."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as error:
        raise DataError(f"{path}: not a readable Parquet file ({_first_line(error)})") from None
    _check_columns(str(path), schema.names, columns, names)
    for column, name in zip(columns, names, strict=True):
        if name != SCORE:  # the score's type: scored_data.checked_arrow_scores
            _check_text_type(str(path), column, schema.field(column).type)
    try:
        dataset = through_cache(
            lambda: datasets.load_dataset(
                "parquet",
                name=f"lwap-{_stamp(path)}",  # the cache key holds the file's size and modification time
                data_files=str(path),
                split="train",
                columns=columns,
            ),
            str(path),
        )
    except LwapError:  # the cache: unwritable, or damaged beyond one rebuild
        raise
    except Exception as error:  # a damaged row group: pyarrow raises inside datasets' generation error
        cause = error.__cause__ or error
        raise DataError(f"{path}: not a readable Parquet file ({_first_line(cause)})") from None
    return _text_columns(dataset, str(path), columns, names, data.max_examples)


def _saved_dataset(folder: Path, data: DataConfig, columns: list[str], names: list[str]) -> Any:
    """A folder `save_to_disk` wrote: a Dataset, or a DatasetDict whose `data.hub_split` is read."""
    import datasets

    from lwap.checks.files import read_json_object

    if not any((folder / name).is_file() for name in SAVED_DATASET_FILES):
        raise DataError(
            f"{folder}: is a directory, expected a data file ({_known_suffixes().removeprefix('one of ')}; "
            f"a save_to_disk folder holds {' or '.join(SAVED_DATASET_FILES)})"
        )
    # the files and folders it names must be inside it (datasets joins the names to the folder's path)
    splits = folder / "dataset_dict.json"
    for name in read_json_object(splits).get("splits") or [] if splits.is_file() else []:
        _check_plain_name(splits, name)
    for state in [folder / "state.json", *folder.glob("*/state.json")]:
        if state.is_file():
            for entry in read_json_object(state).get("_data_files") or []:
                _check_plain_name(state, entry.get("filename") if isinstance(entry, dict) else None)
    try:
        loaded = datasets.load_from_disk(str(folder))
    except Exception as error:  # missing or damaged Arrow files, JSON, versions: datasets raises many types
        raise DataError(f"{folder}: not a readable save_to_disk folder ({_first_line(error)})") from None
    label = str(folder)
    if isinstance(loaded, datasets.DatasetDict):
        if data.hub_split not in loaded:
            raise DataError(
                f"{folder}: no split {data.hub_split!r} (data.hub_split); it has {', '.join(loaded)}"
            )
        loaded, label = loaded[data.hub_split], f"{folder} (split {data.hub_split})"
    _check_columns(label, loaded.column_names, columns, names)
    return _text_columns(loaded, label, columns, names, data.max_examples)


def _check_plain_name(record: Path, name: Any) -> None:
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise DataError(f"{record}: names a file or folder outside its own folder ({name!r})")


def _hub_dataset(data: DataConfig, columns: list[str], names: list[str]) -> Any:
    import datasets

    try:
        dataset = through_cache(
            lambda: datasets.load_dataset(
                data.train, data.hub_config, data_files=data.hub_data_files, split=data.hub_split
            ),
            f"hub dataset {data.train!r}",
        )
    except LwapError:  # the cache: unwritable, or damaged beyond one rebuild
        raise
    except Exception as error:  # datasets raises many types here (offline, not found, bad config/split)
        if hub_offline():
            raise DataError(
                f"data.train {data.train!r} is a hub dataset and the Hugging Face hub is offline "
                f"(HF_HUB_OFFLINE=1) with no cached copy: go online (unset HF_HUB_OFFLINE), or train on a "
                f"local file with --set data.train=PATH, e.g. the data mirror's stand-in that the config's "
                f"header names (under {DATA_DIR_VARIABLE})"
            ) from None
        raise DataError(
            f"data.train {data.train!r} is not a local file, and loading it as a hub dataset failed: "
            f"{_first_line(error)}"
        ) from None
    label = f"hub dataset {data.train!r}"
    _check_columns(label, dataset.column_names, columns, names)
    return _text_columns(dataset, label, columns, names, data.max_examples)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _check_columns(label: str, present: list[str], columns: list[str], names: list[str]) -> None:
    missing = [c for c in columns if c not in present]
    if missing:
        hint = data_rows.pairs_hint(missing, tuple(columns), tuple(names))
        raise DataError(
            f"{label}: missing column(s) {', '.join(repr(m) for m in missing)}; it has "
            f"{', '.join(repr(p) for p in present)}{hint}"
        )


def _check_text_type(label: str, column: str, arrow_type: Any) -> None:
    import pyarrow as pa

    if not (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)):
        raise DataError(f"{label}: column {column!r} holds {arrow_type}, expected text (strings)")


def _text_columns(
    dataset: Any, label: str, columns: list[str], names: list[str], max_examples: int | None
) -> Any:
    """The wanted columns of an Arrow-backed dataset under the loss's names, checked to hold text, with
    empty texts made `EMPTY_TEXT` (see the module docstring); streamed: the data stays on disk."""
    import pyarrow.compute as pc

    dataset = dataset.select_columns(columns)
    dataset = dataset.rename_columns({c: n for c, n in zip(columns, names, strict=True) if c != n})
    if max_examples is not None:
        dataset = dataset.select(range(min(max_examples, len(dataset))))
    if len(dataset) == 0:
        raise DataError(f"{label}: no examples (no rows)")
    for column, name in zip(columns, names, strict=True):
        if name != SCORE:  # the score's type: scored_data.checked_arrow_scores
            _check_text_type(label, column, dataset.features.arrow_schema.field(name).type)
    names = [name for name in names if name != SCORE]
    has_blank = False
    for batch in dataset.with_format("arrow").iter(batch_size=10_000):
        for name in names:
            values = batch.column(name)
            blank = pc.or_kleene(pc.is_null(values), pc.equal(pc.utf8_trim_whitespace(values), ""))
            has_blank = has_blank or bool(pc.any(blank).as_py())
    if has_blank:  # as SimCSE: see the module docstring

        def fill(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
            return {n: [v if v is not None and v.strip() else EMPTY_TEXT for v in batch[n]] for n in names}

        # into the datasets cache, never beside a save_to_disk folder's own files (which the map would use)
        import datasets

        cache = Path(datasets.config.HF_DATASETS_CACHE) / "lwap-empty-texts"
        fingerprint = f"{dataset._fingerprint}-empty-texts"
        cache_file = cache / f"{fingerprint}.arrow"

        def filled() -> Any:
            cache.mkdir(parents=True, exist_ok=True)
            return dataset.map(
                fill,
                batched=True,
                desc="empty texts → ' '",
                new_fingerprint=fingerprint,
                cache_file_name=str(cache_file),
            )

        dataset = through_cache(filled, label, entry=cache_file)
    return dataset


def empty_texts(dataset: Any) -> int:
    """How many texts of `dataset` are `EMPTY_TEXT` (empty in the source, replaced as SimCSE does)."""
    import pyarrow.compute as pc

    table = dataset.with_format("arrow")[:]
    return sum(
        int(pc.sum(pc.equal(table.column(name), EMPTY_TEXT)).as_py() or 0)
        for name in table.column_names
        if name != SCORE
    )
