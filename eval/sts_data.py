"""Readers for the STS benchmark files of the offline data mirror (`lwap.paths.data_dir()`).

Each reader returns `StsPairs` (sentence pairs and gold scores 0–5) and raises `DataError` naming the
file and line of the first malformed row. Files are read with `csv.QUOTE_NONE`: they contain bare quotes.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from lwap.errors import DataError
from lwap.paths import data_dir

STSB_VARIANTS = {
    "senteval": "stsb/senteval-tokenized/sts-{split}.csv",  # what SentEval/SimCSE report on
    "original": "stsb/stsbenchmark-original/sts-{split}.csv",  # official release, untokenized
}
STSB_SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class StsPairs:
    """Aligned sentence pairs with gold similarity scores on the 0–5 scale."""

    sentences1: list[str]
    sentences2: list[str]
    scores: list[float]

    def __len__(self) -> int:
        return len(self.scores)


def parse_score(text: str, where: str) -> float:
    try:
        score = float(text)
    except ValueError:
        raise DataError(f"{where}: score {text!r} is not a number") from None
    if not 0.0 <= score <= 5.0:
        raise DataError(f"{where}: score {score} is outside 0–5")
    return score


def read_stsb_file(path: Path) -> StsPairs:
    """STS Benchmark TSV: genre, file, year, id, score, sentence1, sentence2[, license fields]."""
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    s1, s2, scores = [], [], []
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            where = f"{path}:{number}"
            if len(row) < 7:
                raise DataError(f"{where}: expected at least 7 tab-separated fields, found {len(row)}")
            scores.append(parse_score(row[4], where))
            s1.append(row[5].strip())
            s2.append(row[6].strip())
    if not scores:
        raise DataError(f"{path}: file is empty")
    return StsPairs(s1, s2, scores)


def load_stsb(split: str = "test", variant: str = "senteval") -> StsPairs:
    """STS-B `split` from the data mirror; `senteval` (tokenized, lowercased) is the published protocol."""
    if split not in STSB_SPLITS:
        raise DataError(f"STS-B split must be one of {STSB_SPLITS}, got {split!r}")
    if variant not in STSB_VARIANTS:
        raise DataError(f"STS-B variant must be one of {tuple(STSB_VARIANTS)}, got {variant!r}")
    return read_stsb_file(data_dir() / STSB_VARIANTS[variant].format(split=split))
