"""Hard negatives for a file of (anchor, positive) pairs, mined with a sentence encoder: `lwap mine`.

The mining itself is sentence-transformers' `mine_hard_negatives` (sentence_transformers.util): it embeds
anchors and candidates, ranks the candidates by cosine similarity and keeps, per anchor, the top ones that
pass the guards against false negatives: every positive of the anchor is excluded, the first `range_min`
candidates are skipped (a rank window up to `range_max`), and a candidate scoring within a margin of the
anchor's positive (`absolute_margin`, or `relative_margin` as a share of the positive's score: NV-Retriever's
TopK-PercPos, 0.05 by default) or above `max_score` is no negative. lwap adds what it lacks for a training
file: every training format in (lwap.train.data's readers), candidates from a corpus file or BEIR folder,
a window of every candidate unless bounded (`mine`: a second pass from cached embeddings), bf16 encoding
with fp32 scores, a similarity matrix bounded in memory, and the result written, atomically, as the CSV
`lwap train` reads as it is (`sent0, sent1, hard_neg`, or `hard_neg_1..k` for k negatives).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import random
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lwap.checks.files import atomic_path, write_failure
from lwap.errors import ConfigError, DataError, OutputWriteError
from lwap.paths import expand_path
from lwap.train.config import DataConfig

OUTPUT_SUFFIXES = (".csv", ".csv.gz")
ANCHOR, POSITIVE = "sent0", "sent1"  # DataConfig's default columns: a supervised config reads them as is
SIMILARITY_BUDGET = 2**26  # scores held at once (256 MiB of fp32): bounds mine_hard_negatives' chunks
# candidates looked at past --range-min when --range-max is not given. sentence-transformers' own default
# window is range_min + 10 k + the most positives of an anchor: on a corpus of near neighbours that window
# can lie wholly inside the margin (SciFact: a fifth of the pairs got no negative), and the pair is lost
WINDOW = 100
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")


def negative_columns(k: int) -> list[str]:
    """The hard-negative columns written for k negatives: `hard_neg` (DataConfig's default) for one."""
    return ["hard_neg"] if k == 1 else [f"hard_neg_{i}" for i in range(1, k + 1)]


def training_keys(output: str, k: int) -> list[str]:
    """The `--set` overrides a supervised config needs to train on the mined file."""
    keys = [f"data.train={output}"]
    if k > 1:  # the list replaces the one column, which a config showing every key sets explicitly
        keys += [
            f"data.hard_negative_columns=[{','.join(negative_columns(k))}]",
            "data.hard_negative_column=null",
        ]
    return keys


@dataclass
class MiningOptions:
    """The guards and budget of one mining run (sentence-transformers' names)."""

    num_negatives: int = 1
    range_min: int = 0
    range_max: int | None = None
    absolute_margin: float | None = None
    relative_margin: float | None = 0.05
    max_score: float | None = None
    sampling: str = "top"  # top | random (among the candidates that pass the guards)
    seed: int = 0
    batch_size: int = 64
    precision: str = "fp32"

    def check(self) -> None:
        """ConfigError naming the option of an impossible value, before any data or model is read."""
        if self.num_negatives < 1:
            raise ConfigError(f"--num-negatives must be at least 1, got {self.num_negatives}")
        if self.range_min < 0:
            raise ConfigError(f"--range-min must be 0 or more, got {self.range_min}")
        if self.range_max is not None and self.range_max - self.range_min < self.num_negatives:
            raise ConfigError(
                f"--range-max {self.range_max} leaves {self.range_max - self.range_min} candidates after "
                f"--range-min {self.range_min}: fewer than --num-negatives {self.num_negatives}"
            )
        for name, value in (
            ("--absolute-margin", self.absolute_margin),
            ("--relative-margin", self.relative_margin),
        ):
            if value is not None and value < 0:
                raise ConfigError(f"{name} must be 0 or more (or left out), got {value}")
        if self.sampling not in ("top", "random"):
            raise ConfigError(f"--sampling must be top or random, got {self.sampling!r}")
        if self.batch_size < 1:
            raise ConfigError(f"--batch-size must be at least 1, got {self.batch_size}")


@dataclass
class MiningResult:
    pairs: int  # rows read
    rows: int  # rows written (each with num_negatives negatives)
    candidates: int  # distinct candidate texts (the corpus and the positives)
    seconds: float
    columns: list[str] = field(default_factory=list)


def check_output_name(path: Path) -> None:
    if not path.name.lower().endswith(OUTPUT_SUFFIXES):
        raise ConfigError(
            f"--output {path}: lwap mine writes a CSV (what lwap train reads with its default columns); "
            f"expected a name ending in {', '.join(OUTPUT_SUFFIXES)}"
        )


def read_pairs(path: str, anchor_column: str, positive_column: str) -> Any:
    """The pairs through lwap train's own readers (every format and check they have): a `datasets.Dataset`
    with columns `anchor`, `positive`."""
    from lwap.train.data import load_train_dataset

    data = DataConfig(
        train=path, anchor_column=anchor_column, positive_column=positive_column, hard_negative_column=None
    )
    return load_train_dataset(data, "sup_simcse")


def read_corpus(path: str, text_column: str) -> list[str]:
    """Candidate texts: a BEIR folder's documents (title + text, as search encodes them), or a training
    file's text column (a text file: one a line) through lwap train's readers. Empty texts are left out."""
    from lwap.eval.beir_data import is_beir_folder
    from lwap.eval.beir_data import read_corpus as read_beir_corpus
    from lwap.train.data import EMPTY_TEXT, load_train_dataset

    folder = expand_path(path)
    if folder.is_dir():
        if not is_beir_folder(folder):
            raise DataError(
                f"{folder}: is a directory but not a BEIR folder (no corpus.jsonl[.gz]) (--corpus); expected "
                "a BEIR folder or a file of texts (.txt: one a line; .csv/.tsv: --corpus-column)"
            )
        texts = list(read_beir_corpus(folder).values())
    else:
        texts = load_train_dataset(DataConfig(train=path, text_column=text_column), "unsup_simcse")["text"]
    return [text for text in texts if text != EMPTY_TEXT and text.strip()]


@contextlib.contextmanager
def forward_in(model: Any, precision: str) -> Iterator[None]:
    """The model's forward (encoding alone) in `precision`. Not one autocast around mine_hard_negatives:
    its similarity matrix, ranking and margin checks would then run in bf16 too, whose 8-bit mantissa
    ties scores and blurs the margins; an instance `forward` leaves those in fp32."""
    if precision == "fp32":
        yield
        return
    from lwap.encoding import autocast

    original = model.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        with autocast(precision, model.device):
            return original(*args, **kwargs)

    model.forward = forward
    try:
        yield
    finally:
        del model.forward


def default_window(options: MiningOptions) -> int:
    """The first pass's candidates without --range-max: `WINDOW` past --range-min, 10 per negative if more."""
    return options.range_min + max(WINDOW, 10 * options.num_negatives)


def mine(
    pairs: Any,
    model: Any,
    options: MiningOptions,
    corpus: Sequence[str] | None = None,
    scratch: Path | None = None,
) -> tuple[Any, int]:
    """(mined dataset with columns anchor, positive, negative_1..k; number of candidate texts).

    Without `range_max`, the window is in effect every candidate, at the cost of the first `WINDOW`: the
    pairs that got no negative there (the model ranks their positive below the whole window, so every
    candidate in it is within the margin) are mined again over all candidates, from embeddings cached in
    a temporary folder under `scratch` (mine_hard_negatives' `cache_folder`: the corpus is not encoded
    twice). A pair is left out only where no candidate at all passes the guards.
    """
    # the very candidate list mine_hard_negatives builds (corpus, then positives, de-duplicated): the
    # same list in both passes, so the second finds the first's cached corpus embeddings
    candidates = list(dict.fromkeys([*(corpus or ()), *pairs["positive"]]))
    window = options.range_max or default_window(options)
    random.seed(options.seed)  # sampling "random" draws from Python's generator
    with (
        tempfile.TemporaryDirectory(prefix=".lwap-mine-", dir=scratch) as cache,
        forward_in(model, options.precision),
    ):
        mined = _mine_once(pairs, model, options, candidates, window, cache)
        if options.range_max is None and window < len(candidates):
            found = set(zip(mined["anchor"], mined["positive"], strict=True))
            again = [
                i
                for i, pair in enumerate(zip(pairs["anchor"], pairs["positive"], strict=True))
                if pair not in found
            ]
            if again:
                print(
                    f"lwap mine: {len(again):,} pairs got no negative in the {window} most similar "
                    f"candidates; looking again over all {len(candidates):,}",
                    flush=True,
                )
                from datasets import concatenate_datasets

                more = _mine_once(pairs.select(again), model, options, candidates, len(candidates), cache)
                mined = concatenate_datasets([mined, more]) if len(more) else mined
    return mined, len(candidates)


def _mine_once(
    pairs: Any, model: Any, options: MiningOptions, candidates: list[str], window: int, cache: str
) -> Any:
    from sentence_transformers.util import mine_hard_negatives

    return mine_hard_negatives(
        pairs,
        model,
        anchor_column_name="anchor",
        positive_column_name="positive",
        corpus=candidates,
        range_min=options.range_min,
        range_max=window,
        max_score=options.max_score,
        absolute_margin=options.absolute_margin,
        relative_margin=options.relative_margin,
        num_negatives=options.num_negatives,
        sampling_strategy=options.sampling,
        output_format="n-tuple",  # every row has k negatives: a row with fewer is left out (counted)
        batch_size=options.batch_size,
        faiss_batch_size=max(1, min(16384, SIMILARITY_BUDGET // max(len(candidates), 1))),
        verbose=True,
        cache_folder=cache,
    )


def _opened(path: Path, gz: bool) -> Any:
    return gzip.open(path, "wb") if gz else path.open("wb")


def write_mined(mined: Any, path: Path, k: int) -> list[str]:
    """The mined rows as a CSV `lwap train` reads (header sent0, sent1, hard_neg[_i]); atomic."""
    columns = [ANCHOR, POSITIVE, *negative_columns(k)]
    sources = ["anchor", "positive", *(f"negative_{i}" for i in range(1, k + 1))]
    gz = path.name.lower().endswith(".gz")
    path.parent.mkdir(parents=True, exist_ok=True)  # check_output found it writable
    with (
        atomic_path(path) as partial,
        _opened(partial, gz) as raw,
        io.TextIOWrapper(raw, encoding="utf-8", newline="") as handle,
    ):
        writer = csv.writer(handle)
        writer.writerow(columns)
        for batch in mined.select_columns(sources).iter(batch_size=1000):
            writer.writerows(zip(*(batch[name] for name in sources), strict=True))
    return columns


def _short_write(error: OSError, where: Path) -> str | None:
    """numpy's `np.save` reports a full disk without an errno, as `N requested and M written`."""
    if error.errno is not None or not _SHORT_WRITE.fullmatch(str(error)):
        return None
    try:
        free = f"; {shutil.disk_usage(where).free / 2**20:.1f} MiB free on that file system"
    except OSError:
        free = ""
    return f"a short write: {error}{free}"


def read_inputs(
    pairs_path: str,
    *,
    anchor_column: str = ANCHOR,
    positive_column: str = POSITIVE,
    corpus_path: str | None = None,
    corpus_column: str = "text",
) -> tuple[Any, list[str] | None]:
    """The pairs and the --corpus texts (None: the candidates are the pairs' positives), read and checked.
    `lwap mine` reads them before its model loads: a bad row is refused without waiting for the model."""
    pairs = read_pairs(pairs_path, anchor_column, positive_column)
    return pairs, read_corpus(corpus_path, corpus_column) if corpus_path is not None else None


def mine_file(
    pairs_path: str,
    inputs: tuple[Any, list[str] | None],
    model: Any,
    output: Path,
    options: MiningOptions,
) -> MiningResult:
    """Mine and write: what `lwap mine` does once its inputs are read (`read_inputs` of `pairs_path`) and
    its model loaded."""
    started = time.perf_counter()
    pairs, corpus = inputs
    scratch = output.parent if output.parent.is_dir() else None  # the embeddings' cache: beside the output
    try:
        mined, candidates = mine(pairs, model, options, corpus, scratch=scratch)
    except OSError as error:  # the embeddings cached on a full disk: one line (the folder is gone already)
        where = scratch or Path(tempfile.gettempdir())
        reason = write_failure(error, where) or _short_write(error, where)
        if reason is None:
            raise
        raise OutputWriteError(
            f"{output}: cannot write the temporary embeddings of the candidates under {where} ({reason}); "
            f"free space there, or choose an --output on a disk with room"
        ) from None
    if len(mined) == 0:
        raise DataError(
            f"{pairs_path}: no pair got {options.num_negatives} hard negative(s) past the guards "
            f"(--range-min {options.range_min}, margins, --max-score); loosen them or give a larger --corpus"
        )
    columns = write_mined(mined, output, options.num_negatives)
    return MiningResult(len(pairs), len(mined), candidates, time.perf_counter() - started, columns)
