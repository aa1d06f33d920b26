"""The dev set that picks the kept checkpoint: STS-B dev (SimCSE's), or the user's own.

`eval.dev` names it: `stsb` (STS-B dev, cosine Spearman: lwap's default, as SimCSE), a scored pairs file
(`lwap.eval.pairs_data`: cosine Spearman against the file's scores) or a BEIR-layout folder (corpus,
queries, `qrels/dev.tsv` or its one qrels file: nDCG@10 by default, `eval.dev_metric` another of
`SEARCH_DEV_METRICS`). The evaluators are sentence-transformers' (`EmbeddingSimilarityEvaluator`,
`InformationRetrievalEvaluator`) through `lwap.eval.evaluators`, encoding at `eval.max_seq_length` (else
the length the saved model reads) in `eval.precision`.

The dev set is read and checked before the output folder is touched (`lwap.train.run`), so a bad path,
a missing column or an empty qrels file stops the run with one line and nothing lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lwap.errors import ConfigError, DataError
from lwap.paths import expand_path
from lwap.train.config_schema import PAIRS_METRICS, SEARCH_DEV_METRICS, EvalConfig

# the readers and evaluators (lwap.eval: sentence-transformers) are imported where a dev set is read:
# `lwap card` imports this module for `summary_dev` alone

STSB_DEV_KEY = "eval_stsb-dev_spearman_cosine"  # what the STS-B dev evaluator logs (name stsb-dev)
DEV_NAME = "dev"  # the evaluator's name for a user's dev set: its metrics log as eval_dev_...
METRIC_LABELS = {
    "spearman": "Spearman",
    "ndcg@10": "nDCG@10",
    "mrr@10": "MRR@10",
    "recall@100": "Recall@100",
    "recall@10": "Recall@10",
    "recall@1": "Recall@1",
    "map@100": "MAP@100",
}


@dataclass(frozen=True)
class DevSet:
    """What selects the checkpoint: which set, which metric, the key the trainer logs it under."""

    kind: str  # "stsb" | "pairs" | "beir"
    source: str  # "stsb", or the path as the config gives it
    metric: str  # "spearman" | one of SEARCH_DEV_METRICS
    data: Any = None  # StsTask (pairs) or BeirDataset (beir); STS-B dev is read by its evaluator
    split: str | None = None  # beir: the qrels split read

    @property
    def key(self) -> str:
        """The metric's name in the trainer's log history (metrics.csv, TensorBoard)."""
        if self.kind == "stsb":
            return STSB_DEV_KEY
        if self.kind == "pairs":
            return f"eval_{DEV_NAME}_spearman_cosine"
        return f"eval_{DEV_NAME}_cosine_{self.metric}"

    @property
    def label(self) -> str:
        """The set by name: 'STS-B dev', or the path and what it is."""
        if self.kind == "stsb":
            return "STS-B dev"
        if self.kind == "pairs":
            return f"{self.source} (scored pairs)"
        return f"{self.source} (BEIR, qrels/{self.split}.tsv)"

    @property
    def metric_label(self) -> str:
        return METRIC_LABELS.get(self.metric, self.metric)

    @property
    def name(self) -> str:
        """Set and metric in a few words, e.g. 'STS-B dev Spearman', 'my-dev (BEIR, ...) nDCG@10'."""
        return f"{self.label} {self.metric_label}"

    @property
    def short_name(self) -> str:
        """`name` with the folder or file name alone (a plot's axis label)."""
        where = "STS-B dev" if self.kind == "stsb" else f"{Path(self.source).name} ({self.kind})"
        return f"{where} {self.metric_label}"

    @property
    def notes(self) -> list[str]:
        """What the reader noticed that loads but skews the score (judgements naming documents missing
        from the corpus, queries left out), as `lwap eval` says them before scoring."""
        return list(getattr(self.data, "notes", None) or []) if self.kind == "beir" else []

    def summary(self) -> dict[str, Any]:
        """How train_summary.json names the dev set."""
        return {"dev_set": self.label, "dev_metric": self.metric, "dev_metric_key": self.key}


def dev_kind(e: EvalConfig) -> str | None:
    """stsb, pairs or beir from the config alone (a folder is a BEIR folder; anything else a file)."""
    if e.dev is None:
        return None
    if e.dev == "stsb":
        return "stsb"
    return "beir" if expand_path(e.dev).is_dir() else "pairs"


def dev_metric(e: EvalConfig, kind: str) -> str:
    """The metric that selects: `eval.dev_metric`, or the kind's main one; ConfigError if it does not fit."""
    valid = PAIRS_METRICS if kind in ("stsb", "pairs") else SEARCH_DEV_METRICS
    metric = e.dev_metric or valid[0]
    if metric not in valid:
        what = {"stsb": "STS-B dev", "pairs": "a scored pairs file", "beir": "a BEIR folder"}[kind]
        raise ConfigError(
            f"eval.dev_metric {metric!r} does not apply to {what} (eval.dev: {e.dev}); "
            f"valid: {', '.join(valid)}"
        )
    return metric


def load_dev_set(e: EvalConfig) -> DevSet | None:
    """The dev set `e` names, read and checked (DataError naming the file and line; ConfigError for a
    metric that does not fit); None for `eval.dev: null`."""
    kind = dev_kind(e)
    if kind is None or e.dev is None:
        return None
    metric = dev_metric(e, kind)
    if e.dev_column_names is not None and kind != "pairs":
        what = "STS-B dev" if kind == "stsb" else "a BEIR folder"
        raise ConfigError(
            f"eval.dev_column_names is for a scored pairs dev file without a header row; eval.dev "
            f"({e.dev}) is {what}: set eval.dev_column_names: null"
        )
    if kind == "stsb":
        return DevSet("stsb", "stsb", metric)
    path = expand_path(e.dev)
    if kind == "beir":
        from lwap.eval.beir_data import is_beir_folder, load_beir, selection_split

        if not is_beir_folder(path):
            raise DataError(
                f"{path}: is a directory but not a BEIR folder (no corpus.jsonl[.gz]) (eval.dev); expected "
                "stsb, a scored pairs file (.csv/.tsv[.gz]) or a BEIR folder (corpus.jsonl, queries.jsonl, "
                "qrels/dev.tsv)"
            )
        try:  # the readers' refusals (lwap eval's too: judgements naming no corpus document) + the key
            split = selection_split(path)
            data = load_beir(path, split, name=DEV_NAME)
        except DataError as error:
            raise DataError(f"{error} (eval.dev)") from None
        return DevSet("beir", e.dev, metric, data, split)
    from lwap.checks.files import check_file
    from lwap.eval.pairs_data import load_scored_pairs

    check_file(path, key="eval.dev")
    pairs = load_scored_pairs(path, e.dev_columns, name=DEV_NAME, column_names=e.dev_column_names)
    return DevSet("pairs", e.dev, metric, pairs)


def dev_evaluator(dev: DevSet, e: EvalConfig, max_seq_length: int) -> Any:
    """The sentence-transformers evaluator that scores `dev` at `max_seq_length` tokens (`eval.max_seq_length`
    wins) in `eval.precision`."""
    from lwap.eval.evaluators import retrieval_evaluator, similarity_evaluator, stsb_evaluator

    length = e.max_seq_length or max_seq_length
    if dev.kind == "stsb":
        return stsb_evaluator("dev", batch_size=e.batch_size, max_seq_length=length, precision=e.precision)
    if dev.kind == "pairs":
        pairs = dev.data.concatenated()
        return similarity_evaluator(
            pairs, DEV_NAME, batch_size=e.batch_size, max_seq_length=length, precision=e.precision
        )
    return retrieval_evaluator(
        dev.data, DEV_NAME, batch_size=e.batch_size, max_seq_length=length, precision=e.precision
    )


def summary_dev(summary: dict[str, Any]) -> tuple[str, str, str]:
    """(set label, metric label, logged key) of a run's summary; runs from before `eval.dev` selected on
    STS-B dev, and their summaries say nothing about it."""
    metric = summary.get("dev_metric") or "spearman"
    return (
        summary.get("dev_set") or "STS-B dev",
        METRIC_LABELS.get(metric, metric),
        summary.get("dev_metric_key") or STSB_DEV_KEY,
    )
