"""The same benchmarks run through `mteb.evaluate`, as offline custom tasks over the local files.

Each STS benchmark is an `AbsTaskSTS` and each BEIR folder an `AbsTaskRetrieval` whose `load_data` puts
the pairs / corpus that lwap's own readers produced into mteb's in-memory layout, so mteb never goes to
the hub. Three mteb behaviours are guarded against here:

- `mteb.evaluate` turns any model object it does not recognise into an empty `ModelMeta` and encodes with
  whatever that loads: the model is wrapped explicitly in `SentenceTransformerEncoderWrapper`, and
  `evaluate_with_mteb` checks that the wrapper's `encode` really ran for every task.
- results are cached by model name in ~/.cache/mteb and silently reused: the cache is switched off.
- the codecarbon tracker is switched off (it may phone home).

`all` runs each SemEval set as one concatenated subset; `wmean` runs one mteb subset per file and weights
the per-subset Spearman by the subset sizes, as lwap's own scorer does.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

from datasets import Dataset, DatasetDict
from datasets.utils import logging as datasets_logging
from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData
from mteb.abstasks.sts import AbsTaskSTS
from mteb.abstasks.task_metadata import TaskMetadata
from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper
from sentence_transformers import SentenceTransformer

from lwap.encoding import autocast
from lwap.errors import ConfigError
from lwap.eval.beir_data import BeirDataset
from lwap.eval.search import search_entry
from lwap.eval.sts_data import StsPairs, StsTask
from lwap.eval.sts_scoring import AGGREGATIONS

MTEB_SEARCH_METRICS = {
    "ndcg@10": "ndcg_at_10",
    "mrr@10": "mrr_at_10",
    "recall@100": "recall_at_100",
    "recall@10": "recall_at_10",
    "recall@1": "recall_at_1",
    "map@100": "map_at_100",
}


def _metadata(
    name: str, description: str, kind: str, main_score: str, subsets: Sequence[str] | None
) -> TaskMetadata:
    return TaskMetadata(
        name=name,
        description=description,
        dataset={"path": f"lwap-local/{name}", "revision": "local"},
        type=kind,
        category="t2t",
        modalities=["text"],
        eval_splits=["test"],
        eval_langs={s: ["eng-Latn"] for s in subsets} if subsets else ["eng-Latn"],
        main_score=main_score,
        bibtex_citation="",
    )


def _pairs_dataset(pairs: StsPairs) -> DatasetDict:
    return DatasetDict(
        {
            "test": Dataset.from_dict(
                {"sentence1": pairs.sentences1, "sentence2": pairs.sentences2, "score": pairs.scores}
            )
        }
    )


class LocalSTSTask(AbsTaskSTS):
    """An lwap STS benchmark as an mteb STS task (scores 0–5, cosine Spearman is the main score).

    mteb reads `metadata` from the class (it drops instance copies when unloading data), so each
    benchmark gets a subclass of its own: build instances with `make_sts_task`.
    """

    min_score = 0
    max_score = 5

    def __init__(self, task: StsTask, subsets: dict[str, StsPairs]) -> None:
        self.lwap_task = task
        self.lwap_subsets = subsets
        super().__init__()

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        self.dataset = {name: _pairs_dataset(pairs) for name, pairs in self.lwap_subsets.items()}
        self.data_loaded = True


def make_sts_task(task: StsTask, aggregation: str = "all") -> LocalSTSTask:
    """`all`: one concatenated subset; `wmean`: one mteb subset per file of the benchmark."""
    if aggregation not in AGGREGATIONS:
        raise ConfigError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    one = aggregation == "all" or len(task.subsets) == 1
    subsets = {"default": task.concatenated()} if one else dict(task.subsets)
    metadata = _metadata(
        f"lwap-{task.name}",
        f"{task.display_name} from lwap's local files",
        "STS",
        "cosine_spearman",
        None if one else list(subsets),
    )
    cls = type(f"LwapSTS_{task.name}", (LocalSTSTask,), {"metadata": metadata})
    return cls(task, subsets)


class LocalRetrievalTask(AbsTaskRetrieval):
    """A BEIR-layout folder as an mteb retrieval task (nDCG@10 is the main score); see `make_search_task`."""

    def __init__(self, dataset: BeirDataset) -> None:
        self.lwap_dataset = dataset
        super().__init__()

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        data = self.lwap_dataset
        ids = list(data.corpus)
        corpus = Dataset.from_dict(
            {"id": ids, "title": [data.corpus[i][0] for i in ids], "text": [data.corpus[i][1] for i in ids]}
        )
        queries = Dataset.from_dict({"id": list(data.queries), "text": list(data.queries.values())})
        split = RetrievalSplitData(corpus=corpus, queries=queries, relevant_docs=data.qrels, top_ranked=None)
        self.dataset = {"default": {"test": split}}
        self.data_loaded = True


def make_search_task(dataset: BeirDataset) -> LocalRetrievalTask:
    metadata = _metadata(
        f"lwap-{dataset.name}", f"{dataset.name} from {dataset.folder}", "Retrieval", "ndcg_at_10", None
    )
    cls = type(f"LwapRetrieval_{dataset.name}", (LocalRetrievalTask,), {"metadata": metadata})
    return cls(dataset)


class _CountingWrapper(SentenceTransformerEncoderWrapper):
    """mteb's own wrapper for SentenceTransformer models, counting the texts it encodes per task.

    bf16 autocast covers the encoding only; mteb's similarity and scoring stay in fp32.
    """

    def __init__(self, model: SentenceTransformer, precision: str = "fp32") -> None:
        super().__init__(model)
        self.precision = precision
        self.encoded: dict[str, int] = {}

    def encode(self, inputs: Any, *, task_metadata: TaskMetadata, **kwargs: Any) -> Any:
        with autocast(self.precision, self.model.device):
            embeddings = super().encode(inputs, task_metadata=task_metadata, **kwargs)
        if hasattr(embeddings, "float"):  # torch tensor: upcast, as mteb's own postprocessing does
            embeddings = embeddings.float()
        elif hasattr(embeddings, "astype"):
            embeddings = embeddings.astype("float32", copy=False)
        self.encoded[task_metadata.name] = self.encoded.get(task_metadata.name, 0) + len(embeddings)
        return embeddings


def evaluate_with_mteb(
    model: SentenceTransformer,
    sts_tasks: Sequence[StsTask],
    search_sets: Sequence[BeirDataset],
    *,
    aggregation: str = "all",
    batch_size: int = 128,
    precision: str = "fp32",
    show_progress_bar: bool = False,
) -> tuple[dict[str, dict], dict[str, dict]]:
    """(STS results, search results) in the same shape as lwap's own scorers, computed by mteb."""
    import mteb

    logging.getLogger("mteb").setLevel(logging.ERROR)
    tasks = [make_sts_task(t, aggregation) for t in sts_tasks] + [make_search_task(d) for d in search_sets]
    if not tasks:
        return {}, {}
    bars_were_on = datasets_logging.is_progress_bar_enabled()
    if not show_progress_bar:
        datasets_logging.disable_progress_bar()  # mteb's `datasets.map` calls show bars of their own
    try:
        with warnings.catch_warnings():
            # mteb calls a sentence-transformers method that was renamed (a FutureWarning per call)
            warnings.simplefilter("ignore", FutureWarning)
            wrapper = _CountingWrapper(model, precision)
            result = mteb.evaluate(
                wrapper,
                tasks,
                encode_kwargs={"batch_size": batch_size, "show_progress_bar": show_progress_bar},
                cache=None,
                co2_tracker=False,
                overwrite_strategy="always",
                show_progress_bar=show_progress_bar,
                raise_error=True,
            )
    finally:
        if bars_were_on:
            datasets_logging.enable_progress_bar()
    scores = {r.task_name: r.scores["test"] for r in result.task_results}
    silent = [t.metadata.name for t in tasks if not wrapper.encoded.get(t.metadata.name)]
    if silent:
        raise RuntimeError(f"mteb returned results without encoding anything with the model for {silent}")
    sts = {}
    for task in tasks[: len(sts_tasks)]:
        sts[task.lwap_task.name] = _sts_entry(
            task, scores[task.metadata.name], wrapper.encoded[task.metadata.name]
        )
    search = {}
    for task in tasks[len(sts_tasks) :]:
        search[task.lwap_dataset.name] = _search_entry(task.lwap_dataset, scores[task.metadata.name])
    return sts, search


def _sts_entry(task: LocalSTSTask, subset_scores: list[dict], encoded: int) -> dict:
    by_subset = {s["hf_subset"]: s["cosine_spearman"] * 100.0 for s in subset_scores}
    sizes = {name: len(pairs) for name, pairs in task.lwap_subsets.items()}
    weighted = sum(by_subset[name] * sizes[name] for name in sizes) / sum(sizes.values())
    aggregation = "all" if list(sizes) == ["default"] and len(task.lwap_task.subsets) > 1 else "wmean"
    entry: dict[str, Any] = {"score": weighted, "pairs": task.lwap_task.pairs, "texts_encoded": encoded}
    if len(task.lwap_task.subsets) == 1:
        entry.update(all=weighted, wmean=weighted)
    else:
        entry[aggregation] = weighted
    if aggregation == "wmean" and len(sizes) > 1:
        entry["subsets"] = {name: {"spearman": by_subset[name], "pairs": sizes[name]} for name in sizes}
    entry.update(
        unscored_skipped=task.lwap_task.unscored,
        variant=task.lwap_task.variant,
        sources=task.lwap_task.sources,
    )
    return entry


def _search_entry(data: BeirDataset, subset_scores: list[dict]) -> dict:
    (row,) = subset_scores
    return search_entry(
        data, {ours: float(row[theirs]) * 100.0 for ours, theirs in MTEB_SEARCH_METRICS.items()}
    )
