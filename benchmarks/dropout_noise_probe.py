"""How much does SimCSE's noise move a backbone's vectors, before any training? Unsupervised SimCSE's
positive pair is one sentence under two dropout masks; if dropout moves a sentence's vector as far as the
distance to another sentence, the positive pair says nothing. For each dropout rate this prints, on
STS-B dev (SentEval's copy, sentences truncated to 32 tokens as in SimCSE's training), with the backbone
in training mode: the STS-B dev Spearman of the noisy vectors, the mean cosine of a sentence with itself
under another mask, and the mean cosine between different sentences, for the last [CLS] and the mean.

    python benchmarks/dropout_noise_probe.py benchmarks/backbones/bert-prenorm-4l256-sentences

Prints a Markdown table (docs/COMPARE.md, "Diagnosis if the gate fails"). Rate 0 is the backbone as
evaluated (no noise). Seeded: a rerun prints the same numbers on the same machine.
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F
from scipy.stats import spearmanr
from transformers import AutoModel, AutoTokenizer
from transformers.utils import logging

from lwap.eval.sts_data import load_stsb
from lwap.model import DROPOUT_KEYS

RATES = (0.0, 0.02, 0.05, 0.1)
MAX_LENGTH = 32  # SimCSE's training truncation
BATCH = 128


def embed(model, tokenizer, sentences: list[str], pooling: str) -> torch.Tensor:
    """Unit vectors, the model in whatever mode it is in (training mode: dropout on)."""
    rows = []
    with torch.no_grad():
        for start in range(0, len(sentences), BATCH):
            batch = tokenizer(
                sentences[start : start + BATCH],
                padding=True,
                truncation=True,
                max_length=MAX_LENGTH,
                return_tensors="pt",
            )
            hidden = model(**batch).last_hidden_state
            if pooling == "cls":
                rows.append(hidden[:, 0])
            else:
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                rows.append((hidden * mask).sum(1) / mask.sum(1))
    return F.normalize(torch.cat(rows).float(), dim=-1)


def probe(path: str, rates: tuple[float, ...] = RATES, pairs=None) -> list[dict[str, float | str]]:
    pairs = pairs or load_stsb("dev")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True, trust_remote_code=False)
    rows = []
    for rate in rates:
        model = AutoModel.from_pretrained(
            path, local_files_only=True, trust_remote_code=False, **dict.fromkeys(DROPOUT_KEYS, rate)
        ).train()
        for pooling in ("cls", "mean"):
            torch.manual_seed(0)
            first, second = (
                embed(model, tokenizer, s, pooling) for s in (pairs.sentences1, pairs.sentences2)
            )
            again = embed(model, tokenizer, pairs.sentences1, pooling)  # the same sentences, other masks
            rho = spearmanr((first * second).sum(-1).numpy(), pairs.scores).correlation
            rows.append(
                {
                    "rate": rate,
                    "pooling": pooling,
                    "stsb_dev": 100 * float(rho),
                    "same_sentence": float((first * again).sum(-1).mean()),
                    "other_sentences": float((first @ second.T).mean()),
                }
            )
    return rows


def table(rows: list[dict[str, float | str]]) -> str:
    lines = [
        "| dropout | pooling | STS-B dev (noisy) | cos, same sentence | cos, other sentences |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['rate']} | {r['pooling']} | {r['stsb_dev']:.2f} | {r['same_sentence']:.4f} "
            f"| {r['other_sentences']:.4f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backbone", help="a plain transformers encoder folder")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: beside a training job)")
    a = parser.parse_args(argv)
    torch.set_num_threads(a.threads)
    logging.set_verbosity_error()
    logging.disable_progress_bar()  # one table on stdout, nothing else
    try:
        rows = probe(a.backbone)
    except OSError as error:
        print(
            f"dropout_noise_probe.py: error: cannot load {a.backbone}: {str(error).splitlines()[0]}",
            file=sys.stderr,
        )
        return 2
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
