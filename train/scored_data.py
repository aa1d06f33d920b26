"""Scores of scored-pairs training data (objective scored_pairs): each a finite number, inside the range,
mapped to [0, 1].

sentence-transformers' CoSENT, AnglE and cosine losses read a score per pair; its training_stsbenchmark
example divides STS-B's 0-5 scores by 5, so that they are on the scale of a cosine (CosineSimilarityLoss
regresses the cosine on them; CoSENT and AnglE read only their order). Here any declared range
`data.score_range: [low, high]` is mapped the same way, (score − low) / (high − low); with none, the data's
own min and max are the range, said in one stderr line.

The line-based readers (lwap.train.data_rows) parse and range-check each score where they know its line
(`ScoreColumn.parse`: one line naming file:line); the Arrow-backed sources (Parquet, a save_to_disk folder,
the hub) are checked here on the whole column (`checked_arrow_scores`: one line naming the row).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lwap.errors import DataError
from lwap.train.data_cache import through_cache

SCORE = "score"  # the dataset's score column: a label column of sentence-transformers' data collator


@dataclass(frozen=True)
class ScoreColumn:
    """The score column of a scored pairs file: its name in the file and the declared range, if any."""

    column: str
    bounds: tuple[float, float] | None = None

    def parse(self, value: Any, where: str) -> float:
        """`value` (a table's text or a JSON value) as a finite score inside the bounds; DataError naming
        `where` (file:line) otherwise."""
        if isinstance(value, str):
            text = value.strip()
            try:
                score = float(text)
            except ValueError:
                raise DataError(f"{where}: score {text!r} ({self.column}) is not a number") from None
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            score = float(value)
        else:
            shown = "null" if value is None else repr(value)
            raise DataError(f"{where}: score {shown} ({self.column}) is not a number")
        if not math.isfinite(score):
            raise DataError(f"{where}: score {score!r} ({self.column}) is not a finite number")
        if self.bounds is not None and not self.bounds[0] <= score <= self.bounds[1]:
            raise DataError(
                f"{where}: score {score:g} ({self.column}) is outside data.score_range {_shown(self.bounds)}"
            )
        return score


def _shown(bounds: tuple[float, float]) -> str:
    return f"[{bounds[0]:g}, {bounds[1]:g}]"


def checked_arrow_scores(dataset: Any, label: str, column: str, bounds: tuple[float, float] | None) -> None:
    """The score column of an Arrow-backed dataset: numbers, none null or non-finite, inside `bounds`;
    DataError naming `label` and the first bad row (1-based) otherwise."""
    import numpy as np
    import pyarrow as pa

    arrow_type = dataset.features.arrow_schema.field(SCORE).type
    if not (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)):
        raise DataError(f"{label}: column {column!r} holds {arrow_type}, expected numbers (the scores)")
    values = dataset.with_format("arrow")[:].column(SCORE).to_numpy(zero_copy_only=False).astype(float)
    bad = ~np.isfinite(values)
    if bounds is not None:
        bad |= (values < bounds[0]) | (values > bounds[1])
    if bad.any():
        row = int(np.argmax(bad))
        value = float(values[row])
        outside = f"outside data.score_range {_shown(bounds)}" if bounds is not None else ""
        what = "not a finite number" if not math.isfinite(value) else outside
        raise DataError(f"{label}: row {row + 1}: score {value:g} ({column}) is {what}")


def normalised(dataset: Any, label: str, bounds: tuple[float, float] | None) -> Any:
    """`dataset` with its scores mapped from `bounds` (or the data's own min and max, said on stderr) to
    [0, 1], through the `datasets` cache (memory-mapped, as the texts are)."""
    import datasets
    import pyarrow.compute as pc

    if bounds is None:
        low_high = pc.min_max(dataset.with_format("arrow")[:].column(SCORE))
        low, high = float(low_high["min"].as_py()), float(low_high["max"].as_py())
        if not low < high:
            raise DataError(f"{label}: every pair has the same score ({low:g}): nothing to train an order on")
        print(
            f"lwap train: scores of {label} range over [{low:g}, {high:g}] (read from the data), mapped to "
            "[0, 1]; data.score_range declares the range instead",
            file=sys.stderr,
            flush=True,
        )
    else:
        low, high = bounds
    cache = Path(datasets.config.HF_DATASETS_CACHE) / "lwap-scores"
    fingerprint = f"{dataset._fingerprint}-scores-{low!r}-{high!r}"
    cache_file = cache / f"{fingerprint}.arrow"

    def scale(batch: dict[str, list[Any]]) -> dict[str, list[float]]:
        return {SCORE: [(float(s) - low) / (high - low) for s in batch[SCORE]]}

    def mapped() -> Any:
        cache.mkdir(parents=True, exist_ok=True)
        features = dataset.features.copy()
        features[SCORE] = datasets.Value("float64")
        return dataset.map(
            scale,
            batched=True,
            features=features,
            new_fingerprint=fingerprint,
            cache_file_name=str(cache_file),
        )

    return through_cache(mapped, label, entry=cache_file)
