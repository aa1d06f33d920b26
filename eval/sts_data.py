"""Readers for the STS benchmarks: STS12–16, STS-B and SICK-R, from the offline mirror or the hub.

Every reader returns sentence pairs with gold scores (0–5) and raises `DataError` naming the file and line
of the first malformed row. Data variants:

- `senteval` (default): SentEval's Moses-tokenized, lowercased copies — what SimCSE and the LWAP paper
  report on. The mirror has no tokenized SICK, so SICK-R uses the original release files (for uncased
  WordPiece models the difference is whitespace around punctuation, which the tokenizer splits anyway).
- `raw`: the official release files (`original` is accepted as an alias for STS-B).
- `hub`: the `mteb/*-sts` datasets on the Hugging Face hub, for users online. They hold the same
  STS12–16 / STS-B pairs untokenized but without the per-file subsets (so only the `all` aggregation),
  and `mteb/sickr-sts` is all 9,927 SICK pairs, not the 4,927-pair test split.

Files come from the data mirror, else the sample packaged with lwap (STS-B dev), else, for users online,
the task's `hub` dataset (said on stderr, and the task's `variant` reads `hub`): `lwap.data_sources`.

Like SentEval, sentences are whitespace-normalised (`" ".join(s.split())`) and pairs whose gold score
is empty are skipped (STS15/16 leave many pairs unscored).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lwap.checks.files import text_lines
from lwap.data_sources import first_line, hub_offline, local_file, missing_error, note
from lwap.errors import DataError
from lwap.eval.fields import is_header, parse_score, split_fields

STS_TASKS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
DISPLAY_NAMES = {
    "sts12": "STS12",
    "sts13": "STS13",
    "sts14": "STS14",
    "sts15": "STS15",
    "sts16": "STS16",
    "stsb": "STS-B",
    "sickr": "SICK-R",
}
VARIANTS = ("senteval", "raw", "hub")
# The SemEval subsets SentEval evaluates (STS13 without SMT, which was withdrawn for licensing).
SEMEVAL_SUBSETS = {
    "sts12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "sts13": ("FNWN", "headlines", "OnWN"),
    "sts14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "sts15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "sts16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
# Scored test pairs of the published protocol (SentEval / SimCSE).
PUBLISHED_PAIRS = {
    "sts12": 3108,
    "sts13": 1500,
    "sts14": 3750,
    "sts15": 3000,
    "sts16": 1186,
    "stsb": 1379,
    "sickr": 4927,
}
HUB_IDS = {
    "sts12": "mteb/sts12-sts",
    "sts13": "mteb/sts13-sts",
    "sts14": "mteb/sts14-sts",
    "sts15": "mteb/sts15-sts",
    "sts16": "mteb/sts16-sts",
    "stsb": "mteb/stsbenchmark-sts",
    "sickr": "mteb/sickr-sts",
}
STSB_VARIANTS = {
    "senteval": "stsb/senteval-tokenized/sts-{split}.csv",  # what SentEval/SimCSE report on
    "raw": "stsb/stsbenchmark-original/sts-{split}.csv",  # official release, untokenized
    "original": "stsb/stsbenchmark-original/sts-{split}.csv",
}
STSB_SPLITS = ("train", "dev", "test")
SICK_FILES = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


@dataclass(frozen=True)
class StsPairs:
    """Aligned sentence pairs with gold similarity scores on the 0–5 scale."""

    sentences1: list[str]
    sentences2: list[str]
    scores: list[float]
    unscored: int = 0  # pairs skipped because their gold score was empty

    def __len__(self) -> int:
        return len(self.scores)


@dataclass(frozen=True)
class StsTask:
    """One STS benchmark: its pairs by subset (one subset for STS-B and SICK-R) and where they came from."""

    name: str
    subsets: dict[str, StsPairs]
    variant: str  # the variant actually read (SICK-R under `senteval` is `raw`)
    sources: list[str] = field(default_factory=list)

    @property
    def display_name(self) -> str:
        return DISPLAY_NAMES.get(self.name, self.name)

    @property
    def pairs(self) -> int:
        return sum(len(p) for p in self.subsets.values())

    @property
    def unscored(self) -> int:
        return sum(p.unscored for p in self.subsets.values())

    def concatenated(self) -> StsPairs:
        """All subsets as one set of pairs (the `all` aggregation)."""
        parts = list(self.subsets.values())
        return StsPairs(
            [s for p in parts for s in p.sentences1],
            [s for p in parts for s in p.sentences2],
            [x for p in parts for x in p.scores],
            sum(p.unscored for p in parts),
        )


def _clean(sentence: str) -> str:
    return " ".join(sentence.split())


def read_sts_pair_files(input_path: Path, gold_path: Path) -> StsPairs:
    """A SemEval pair: `STS.input.X.txt` (sentence1<TAB>sentence2[<TAB>source…]) + `STS.gs.X.txt`.

    An empty gold line marks an unscored pair, which is skipped; the two files must have as many lines.
    """
    inputs = [
        (n, split_fields(line, f"{input_path}:{n}", 2, "sentence1, sentence2"))
        for n, line in text_lines(input_path)
    ]
    golds = list(text_lines(gold_path))
    if len(inputs) != len(golds):
        raise DataError(
            f"{input_path} has {len(inputs)} lines but {gold_path} has {len(golds)}: "
            "the input and gold-score files must be aligned line by line"
        )
    s1, s2, scores, unscored = [], [], [], 0
    for (_, fields), (number, gold) in zip(inputs, golds, strict=True):
        if not gold.strip():
            unscored += 1
            continue
        scores.append(parse_score(gold.strip(), f"{gold_path}:{number}"))
        s1.append(_clean(fields[0]))
        s2.append(_clean(fields[1]))
    return StsPairs(s1, s2, scores, unscored)


def _read_scored_table(path: Path, columns: tuple[int, int, int], minimum: int, names: str) -> StsPairs:
    """Tab-separated rows with two sentence columns and a score column; a header line is optional."""
    first, second, score_column = columns
    s1, s2, scores, unscored = [], [], [], 0
    for number, line in text_lines(path):
        where = f"{path}:{number}"
        fields = split_fields(line, where, minimum, names)
        score = fields[score_column].strip()
        if number == 1 and is_header(score):
            continue
        if not score:
            unscored += 1
            continue
        scores.append(parse_score(score, where))
        s1.append(_clean(fields[first]))
        s2.append(_clean(fields[second]))
    if not scores:
        raise DataError(f"{path}: no scored pairs")
    return StsPairs(s1, s2, scores, unscored)


def read_stsb_file(path: Path) -> StsPairs:
    """STS Benchmark TSV: genre, file, year, id, score, sentence1, sentence2[, license fields]."""
    names = "genre, file, year, id, score, sentence1, sentence2"
    return _read_scored_table(Path(path), (5, 6, 4), 7, names)


def read_sick_file(path: Path) -> StsPairs:
    """SICK release TSV: pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment."""
    names = "pair_ID, sentence_A, sentence_B, relatedness_score"
    return _read_scored_table(Path(path), (1, 2, 3), 4, names)


def load_stsb(split: str = "test", variant: str = "senteval") -> StsPairs:
    """STS-B `split` (mirror, packaged sample or hub); `senteval` (tokenized, lowercased) is the published
    protocol."""
    if split not in STSB_SPLITS:
        raise DataError(f"STS-B split must be one of {STSB_SPLITS}, got {split!r}")
    if variant not in STSB_VARIANTS:
        raise DataError(f"STS-B variant must be one of {tuple(STSB_VARIANTS)}, got {variant!r}")
    return load_sts_task("stsb", "raw" if variant == "original" else variant, split).concatenated()


def _semeval_files(task: str, subset: str, variant: str) -> tuple[str, str]:
    """Mirror paths of one SemEval subset: its input and gold-score files."""
    year = task[-2:]
    folder = f"sts12-16/{'senteval-tokenized' if variant == 'senteval' else 'raw'}/STS{year}-en-test"
    prefix = "STS2016" if (year == "16" and variant == "raw") else "STS"
    return f"{folder}/{prefix}.input.{subset}.txt", f"{folder}/{prefix}.gs.{subset}.txt"


def task_files(name: str, variant: str, split: str = "test") -> list[str]:
    """The mirror paths a task reads under `variant` (`senteval` or `raw`), in reading order."""
    if name in SEMEVAL_SUBSETS:
        return [f for subset in SEMEVAL_SUBSETS[name] for f in _semeval_files(name, subset, variant)]
    if name == "stsb":
        return [STSB_VARIANTS[variant].format(split=split)]
    return [f"sick/{SICK_FILES['test']}"]


def load_sts_task(name: str, variant: str = "senteval", split: str = "test") -> StsTask:
    """One benchmark of the STS suite (`STS_TASKS`), test split unless told (STS-B: dev for selection)."""
    if name not in STS_TASKS:
        raise DataError(f"unknown STS task {name!r}; valid: {', '.join(STS_TASKS)}")
    if variant not in VARIANTS:
        raise DataError(f"data variant must be one of {VARIANTS}, got {variant!r}")
    if split != "test" and name != "stsb":
        raise DataError(f"{name} has only a test split here (STS-B also has train/dev), got {split!r}")
    if variant == "hub":
        return _load_hub_task(name, split)
    relatives = task_files(name, variant, split)
    paths = [local_file(relative) for relative in relatives]
    missing = [relative for relative, path in zip(relatives, paths, strict=True) if path is None]
    if missing:
        return _load_hub_task(name, split, missing=missing[0])
    if name in SEMEVAL_SUBSETS:
        pairs = iter(paths)
        subsets = {subset: read_sts_pair_files(next(pairs), next(pairs)) for subset in SEMEVAL_SUBSETS[name]}
        return StsTask(name, subsets, variant, [str(p) for p in paths])
    if name == "stsb":
        return StsTask(name, {split: read_stsb_file(paths[0])}, variant, [str(paths[0])])
    return StsTask(name, {"test": read_sick_file(paths[0])}, "raw", [str(paths[0])])


def _load_hub_task(name: str, split: str, missing: str | None = None) -> StsTask:
    """The task from its mteb hub dataset: asked for (`--data hub`), or standing in for a `missing` file."""
    hub_id = HUB_IDS[name]
    hub_split = "validation" if split == "dev" else split
    what = f"{DISPLAY_NAMES[name]} {split}"
    if missing is not None and not hub_offline():
        note(
            f"{what}: {missing} is not in the data mirror or the package; reading {hub_id} from the hub "
            "(untokenized text, one subset: scores differ slightly from SentEval's copies)"
        )
    try:
        from datasets import load_dataset

        rows = load_dataset(hub_id, split=hub_split)  # offline, a cached copy still loads
    except Exception as error:  # datasets raises many types (offline, not found, network): one message
        if missing is not None:
            raise missing_error(what, missing, hub_id, first_line(error)) from None
        reason = "the hub is offline (HF_HUB_OFFLINE/HF_DATASETS_OFFLINE=1)" if hub_offline() else str(error)
        first = reason.strip().splitlines()[0] if reason.strip() else type(error).__name__
        raise DataError(
            f"could not load {hub_id} ({hub_split}) from the Hugging Face hub: {first}; "
            "use the offline mirror instead (variant 'senteval' or 'raw', LWAP_DATA_DIR)"
        ) from None
    s1, s2, scores = [], [], []
    for index, row in enumerate(rows):
        where = f"{hub_id} ({hub_split}) row {index}"
        scores.append(parse_score(str(row["score"]), where))
        s1.append(_clean(row["sentence1"]))
        s2.append(_clean(row["sentence2"]))
    return StsTask(name, {hub_split: StsPairs(s1, s2, scores)}, "hub", [f"hf://{hub_id}"])
