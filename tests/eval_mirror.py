"""Hand-made evaluation data for the eval tests: a small data mirror in the real layout, and a model
whose embeddings are known exactly (a sentence-transformers StaticEmbedding over a 3-word vocabulary)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from lwap.eval.sts_data import SEMEVAL_SUBSETS

_VOCABULARY = "a man woman dog cat is are playing eating running guitar piano ball food in the park"
WORDS = tuple(_VOCABULARY.split())


def _sentence(rng: np.random.Generator) -> str:
    return " ".join(rng.choice(WORDS, size=int(rng.integers(3, 8))))


def write_sts_pairs(folder: Path, subset: str, rows: list[tuple[str, str, str]]) -> None:
    """STS.input.<subset>.txt and STS.gs.<subset>.txt; a gold of "" is an unscored pair."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"STS.input.{subset}.txt").write_text(
        "".join(f"{a}\t{b}\n" for a, b, _ in rows), encoding="utf-8"
    )
    (folder / f"STS.gs.{subset}.txt").write_text("".join(f"{g}\n" for _, _, g in rows), encoding="utf-8")


def make_mirror(root: Path, pairs: int = 12, seed: int = 0) -> dict[str, int]:
    """A data mirror with every STS file lwap reads and a tiny BEIR `beir-scifact`; returns scored counts.

    Every 5th SemEval pair is unscored. Sentences come from a 17-word vocabulary, so tasks share many.
    """
    rng = np.random.default_rng(seed)
    counts = {}
    for task, subsets in SEMEVAL_SUBSETS.items():
        folder = root / "sts12-16" / "senteval-tokenized" / f"STS{task[-2:]}-en-test"
        for subset in subsets:
            rows = [
                (_sentence(rng), _sentence(rng), "" if i % 5 == 4 else f"{rng.uniform(0, 5):.3f}")
                for i in range(pairs)
            ]
            write_sts_pairs(folder, subset, rows)
        counts[task] = len(subsets) * (pairs - pairs // 5)
    stsb = root / "stsb" / "senteval-tokenized"
    stsb.mkdir(parents=True)
    for split in ("dev", "test"):
        lines = [
            f"main-captions\tMSRvid\t2012test\t{i:04d}\t{rng.uniform(0, 5):.2f}\t"
            f"{_sentence(rng)}\t{_sentence(rng)}\n"
            for i in range(2 * pairs)
        ]
        (stsb / f"sts-{split}.csv").write_text("".join(lines), encoding="utf-8")
    counts["stsb"] = 2 * pairs
    sick = root / "sick"
    sick.mkdir()
    rows = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
    rows += [
        f"{i}\t{_sentence(rng)}\t{_sentence(rng)}\t{rng.uniform(1, 5):.1f}\tNEUTRAL" for i in range(2 * pairs)
    ]
    (sick / "SICK_test_annotated.txt").write_bytes(("\r\n".join(rows) + "\r\n").encode())
    counts["sickr"] = 2 * pairs
    docs = [{"_id": f"d{i}", "title": _sentence(rng), "text": _sentence(rng)} for i in range(20)]
    queries = [{"_id": f"q{i}", "text": _sentence(rng)} for i in range(6)]
    qrels = [(f"q{i}", f"d{(3 * i) % 20}", 1) for i in range(6)]
    write_beir(root / "beir-scifact", docs, queries, qrels)
    return counts


def write_beir(
    folder: Path,
    docs: list[dict],
    queries: list[dict],
    qrels: list[tuple[str, str, int]],
    gzip_corpus: bool = True,
    header: bool = True,
    split: str = "test",
) -> Path:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    corpus = "".join(json.dumps(d) + "\n" for d in docs).encode()
    if gzip_corpus:
        (folder / "corpus.jsonl.gz").write_bytes(gzip.compress(corpus))
    else:
        (folder / "corpus.jsonl").write_bytes(corpus)
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    lines = ["query-id\tcorpus-id\tscore"] if header else []
    lines += [f"{q}\t{d}\t{s}" for q, d, s in qrels]
    (folder / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def fruit_model():
    """A real SentenceTransformer (StaticEmbedding = mean of token vectors) with one-hot word vectors:
    "apple" = e1, "banana" = e2, "cherry" = e3, so every embedding and ranking can be worked out by hand."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tokenizer = Tokenizer(WordLevel({"[UNK]": 0, "apple": 1, "banana": 2, "cherry": 3}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    weights = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    return SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_weights=weights)], device="cpu")
