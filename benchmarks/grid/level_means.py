"""What each level's mean holds before training: why a fixed equal-weight average of every level
(`all_levels_avg`, issue 50) can beat LWAP on one backbone and collapse on SciFact on another.

    python benchmarks/grid/level_means.py             # measures backbones not yet measured, writes the doc
    python benchmarks/grid/level_means.py --report    # docs/LEVEL_MEANS.md from the stored files alone

*Exploratory, added after the `all_levels_avg` cells were read* (docs/COMPARE.md pre-registered the row,
not this probe). For each grid backbone, untouched, one forward pass per text gives every level's masked
mean (the embedding output and each layer, as `all_levels_avg` sees them: a pre-LayerNorm backbone's raw
layers layer-normed) for the SciFact test corpus and queries and for the seven STS test sets, at the
grid's evaluation length (256) and precision (bf16). From those vectors alone, each level, the equal-weight
average of all levels and SimCSE's first-last average are scored as poolers (SciFact nDCG@10 through
sentence-transformers' metrics, STS Avg. (all)), beside what explains the scores: each level's mean norm
(the average weighs a level by its norm: it sums the vectors) and its anisotropy (mean cosine between
distinct texts; near 1, every text looks alike). The last level's row is the untouched `mean` pooler, so it
must reproduce the grid's untouched row. CPU: about 5 minutes per MiniLM-sized backbone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
from sentence_transformers.util import batch_to_device

from benchmarks import REPO
from lwap.checks.files import read_json_object, write_json_atomically, write_text_atomically
from lwap.compare.grid import backbone_name, backbones
from lwap.encoding import autocast
from lwap.eval.beir_data import BeirDataset, load_scifact
from lwap.eval.geometry import anisotropy, unit_rows
from lwap.eval.search import search_evaluator_arguments
from lwap.eval.sts_data import STS_TASKS, StsTask, load_sts_task
from lwap.eval.sts_scoring import aggregate, scored_subsets
from lwap.model import build_model

GRID = REPO / "benchmarks/results/compare"
RESULTS = GRID / "level-means"
OUTPUT = REPO / "docs/LEVEL_MEANS.md"
MAX_LENGTH, PRECISION, BATCH = 256, "bf16", 64  # the grid's evaluation settings


@torch.no_grad()
def level_means(model: SentenceTransformer, texts: list[str]) -> np.ndarray:
    """(texts, levels, hidden): each level's masked mean, as the pooler after the backbone reads it.

    Not `model.encode`: it returns only the pooled vector, and a hook would see its length-sorted batches.
    """
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # less padding, as encode does
    out: np.ndarray | None = None
    for start in range(0, len(texts), BATCH):
        rows = order[start : start + BATCH]
        features = batch_to_device(model.preprocess([texts[i] for i in rows]), model.device)
        with autocast(PRECISION, model.device):
            features = model(features)
        mask = features["attention_mask"].unsqueeze(-1).float()
        hidden = features["all_layer_embeddings"]
        means = torch.stack([(h.float() * mask).sum(1) / mask.sum(1) for h in hidden])
        if out is None:
            out = np.zeros((len(texts), means.shape[0], means.shape[2]), dtype=np.float32)
        out[rows] = means.transpose(0, 1).cpu().numpy()
    assert out is not None, "no texts"
    return out


ALL_LEVELS = "all levels, equal weights (`all_levels_avg`)"  # the row of the pooler this probe explains


def poolers(levels: int) -> dict[str, list[int]]:
    """Each level alone, then the two fixed averages the grid has as rows."""
    rows = {("embedding output" if i == 0 else f"layer {i}"): [i] for i in range(levels)}
    return {**rows, ALL_LEVELS: list(range(levels)), "first-last (`first_last_avg`)": [1, levels - 1]}


def level_weights(rows: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Each single level's share of the summed norms on the documents: how much of the equal-weight
    average it makes (the average sums the vectors)."""
    norms = {name: r["norm_documents"] for name, r in rows.items() if len(r["levels"]) == 1}
    return {name: norm / sum(norms.values()) for name, norm in norms.items()}


def ndcg_at_10(evaluator: InformationRetrievalEvaluator, queries: np.ndarray, documents: np.ndarray) -> float:
    """nDCG@10 × 100 of these vectors (rows in the evaluator's query and corpus order), by the metric code
    the grid's evaluator runs; only the ranking is done here, from vectors already made."""
    scores = torch.from_numpy(unit_rows(queries) @ unit_rows(documents).T)
    top = torch.topk(scores, min(100, scores.shape[1]), dim=1)
    ids = evaluator.corpus_ids
    results = [
        [{"corpus_id": ids[j], "score": s} for s, j in zip(v, i, strict=True)]
        for v, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)
    ]
    return float(evaluator.compute_metrics(results)["ndcg@k"][10]) * 100.0


def sts_average(tasks: list[StsTask], vectors: dict[str, np.ndarray]) -> float:
    """Avg. (all) over the tasks, as the grid's cells report it."""
    return float(np.mean([aggregate(scored_subsets(task, vectors))["all"] for task in tasks]))


def measure(backbone: str, dataset: BeirDataset, tasks: list[StsTask]) -> dict[str, Any]:
    """Every row of one backbone's table."""
    model = build_model(backbone, "all_levels_avg", max_seq_length=MAX_LENGTH).eval()
    evaluator = InformationRetrievalEvaluator(**search_evaluator_arguments(dataset), write_csv=False)
    documents = level_means(model, evaluator.corpus)
    queries = level_means(model, evaluator.queries)  # the judged queries, in the evaluator's order
    pairs = [p for task in tasks for p in task.subsets.values()]
    sentences = list(dict.fromkeys(s for p in pairs for s in (*p.sentences1, *p.sentences2)))
    sts = level_means(model, sentences)
    rows = {}
    for name, levels in poolers(documents.shape[1]).items():
        doc_vectors, sts_vectors = documents[:, levels].mean(1), sts[:, levels].mean(1)
        rows[name] = {
            "levels": levels,
            "scifact_ndcg@10": ndcg_at_10(evaluator, queries[:, levels].mean(1), doc_vectors),
            "avg_all": sts_average(tasks, dict(zip(sentences, unit_rows(sts_vectors), strict=True))),
            "norm_documents": float(np.linalg.norm(doc_vectors, axis=1).mean()),
            "norm_sentences": float(np.linalg.norm(sts_vectors, axis=1).mean()),
            "anisotropy_documents": anisotropy(doc_vectors),
            "anisotropy_sentences": anisotropy(sts_vectors),
        }
    return {
        "backbone": backbone,
        "max_seq_length": MAX_LENGTH,
        "precision": PRECISION,
        "documents": len(evaluator.corpus),
        "queries": len(evaluator.queries),
        "sts_sentences": len(sentences),
        "rows": rows,
    }


def table(result: dict[str, Any]) -> list[str]:
    rows = result["rows"]
    weights = level_weights(rows)
    lines = [
        f"### {backbone_name(result['backbone'])}",
        "",
        "| pooled from | SciFact nDCG@10 | STS Avg. (all) | norm, SciFact docs | weight in the average, docs "
        "| anisotropy, docs | norm, STS | anisotropy, STS |",
        "| --- |" + " ---: |" * 7,
    ]
    for name, r in rows.items():
        weight = f"{weights[name]:.2f}" if name in weights else "–"
        lines.append(
            f"| {name} | {r['scifact_ndcg@10']:.2f} | {r['avg_all']:.2f} | {r['norm_documents']:.2f} "
            f"| {weight} | {r['anisotropy_documents']:.3f} | {r['norm_sentences']:.2f} "
            f"| {r['anisotropy_sentences']:.3f} |"
        )
    return [*lines, ""]


def reading(result: dict[str, Any]) -> str:
    """One line per backbone, from its rows: the best level on SciFact against the others, and how much of
    the equal-weight average the last layer makes."""
    rows = result["rows"]
    weights = level_weights(rows)
    search = {name: rows[name]["scifact_ndcg@10"] for name in weights}
    best = max(search, key=search.__getitem__)
    others = [score for name, score in search.items() if name != best]
    last_name = list(weights)[-1]
    last, average = rows[last_name], rows[ALL_LEVELS]
    return (
        f"- {backbone_name(result['backbone'])}: the best level on SciFact is {best} "
        f"({search[best]:.2f}; the others {min(others):.2f}–{max(others):.2f}); the last layer "
        f"({last_name}) makes {weights[last_name]:.2f} of the equal-weight average on the documents, which "
        f"scores {average['scifact_ndcg@10']:.2f} (STS {average['avg_all']:.2f}, the last layer's mean "
        f"{last['avg_all']:.2f})."
    )


def result_file(backbone: str) -> Path:
    return RESULTS / f"{backbone_name(backbone)}.json"


def report(found: list[dict[str, Any]]) -> str:
    first = found[0] if found else {"documents": 0, "queries": 0, "sts_sentences": 0}
    lines = [
        "# What each level's mean holds, untouched",
        "",
        "Generated by `python benchmarks/grid/level_means.py` (its docstring says what and why; exploratory, "
        "made after the `all_levels_avg` cells were read). Untouched backbones, max length "
        f"{MAX_LENGTH}, {PRECISION}; SciFact test ({first['documents']:,} documents, {first['queries']} "
        f"queries) and the seven STS test sets ({first['sts_sentences']:,} distinct sentences). *Weight in "
        "the average*: a level's share of the summed norms, i.e. how much of the equal-weight average it "
        "makes. Anisotropy: mean cosine between distinct texts. The last layer's row is the untouched "
        "`mean` pooler. Do not edit by hand.",
        "",
    ]
    if found:
        lines += ["## What it shows", "", *(reading(result) for result in found), "", "## Each level", ""]
    for result in found:
        lines += table(result)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--report", action="store_true", help="only remake the doc from the stored files")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    names = backbones(GRID)
    if not args.report:
        dataset, tasks = load_scifact("test"), [load_sts_task(name) for name in STS_TASKS]
        for backbone in names:
            if not result_file(backbone).exists():
                RESULTS.mkdir(parents=True, exist_ok=True)
                print(f"[levels] {backbone}", file=sys.stderr, flush=True)
                write_json_atomically(measure(backbone, dataset, tasks), result_file(backbone))
    found = [read_json_object(result_file(b)) for b in names if result_file(b).exists()]
    text = report(found)
    write_text_atomically(args.output, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
