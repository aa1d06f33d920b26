"""The fields of the evaluation data files: tab-separated fields, header lines, gold scores.

STS, SICK and BEIR readers share these, so a wrong delimiter, too few fields, a header or not and a bad
score give the same errors naming file and line for all of them. Reading the lines themselves (missing
file, not UTF-8, truncated gzip) is `lwap.checks.files.text_lines`, shared with training and `lwap encode`.
"""

from __future__ import annotations

import re

from lwap.errors import DataError

_HEADER_FIELD = re.compile(r"[A-Za-z][A-Za-z0-9_\- ]*")
_OTHER_DELIMITERS = (",", ";", "|")


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
