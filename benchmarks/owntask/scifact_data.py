"""The user's files of the SciFact case, made once from the data mirror's SciFact train split.

- the split: SciFact's 809 train claims (those with a positive judgement), shuffled with a fixed seed; about
  a fifth (`DEV_SHARE`) is the user's dev set, the rest their training claims. The 300 test claims are not
  read here (`lwap eval` scores them at the end).
- `dev/`: a BEIR folder: the dev claims (`queries.jsonl`), their judgements (`qrels/dev.tsv`) and a corpus
  of the documents they cite plus a seeded sample of the others, `DEV_CORPUS` documents in all (the whole
  5,183-document corpus costs minutes per evaluation on 2 CPUs; a dev set is evaluated several times a run).
- `pairs.csv`: one (claim, cited abstract) row per judgement of a training claim, header `sent0,sent1`;
  the abstract as search encodes it (title + text, `lwap.eval.beir_data.document_text`), so `lwap mine
  --corpus` with the SciFact folder sees each positive as the very text of its corpus entry.

Files are written once (atomically) and never rewritten: `make_files` leaves existing ones as they are
(and `split.json` records what they hold), so every run of the case reads the same files.
"""

from __future__ import annotations

import csv
import io
import json
import random
from dataclasses import dataclass
from pathlib import Path

from lwap.checks.files import atomic_path, write_json_atomically, write_text_atomically
from lwap.eval.beir_data import BeirDataset, load_beir
from lwap.paths import find_data_dir

DEV_SHARE = 0.2
DEV_CORPUS = 1000  # documents in the dev folder's corpus: the dev claims' cited ones, then a sample
SPLIT_SEED = 0


@dataclass(frozen=True)
class UserFiles:
    folder: Path
    dev: Path  # BEIR folder
    pairs: Path  # sent0, sent1
    split: Path  # split.json: the claim ids of each side, counts, seed

    @classmethod
    def under(cls, folder: Path) -> UserFiles:
        return cls(folder, folder / "dev", folder / "pairs.csv", folder / "split.json")


def scifact_folder() -> Path:
    mirror = find_data_dir()
    if mirror is None or not (mirror / "beir-scifact").is_dir():
        raise SystemExit("the SciFact case needs the data mirror's beir-scifact/ (set LWAP_DATA_DIR)")
    return mirror / "beir-scifact"


def split_claims(train: BeirDataset, seed: int = SPLIT_SEED, share: float = DEV_SHARE) -> tuple[list, list]:
    """(training claim ids, dev claim ids): a seeded shuffle of the sorted ids, the first `share` dev."""
    ids = sorted(train.queries)
    random.Random(seed).shuffle(ids)
    cut = round(len(ids) * share)
    return sorted(ids[cut:]), sorted(ids[:cut])


def make_files(
    folder: Path, *, dev_corpus: int = DEV_CORPUS, max_pairs: int | None = None, seed: int = SPLIT_SEED
) -> UserFiles:
    """Write the user's files under `folder` unless they are there already; return where they are."""
    files = UserFiles.under(folder)
    if files.split.is_file():
        return files
    source = scifact_folder()
    train = load_beir(source, "train", name="scifact-train")
    training_ids, dev_ids = split_claims(train, seed)
    pairs = [
        (train.queries[q], train.document_text(d))
        for q in training_ids
        for d in sorted(train.qrels[q])
        if d in train.corpus  # a judgement may name a document missing from the corpus
    ]
    pairs = pairs[:max_pairs] if max_pairs else pairs
    _write_pairs(files.pairs, pairs)
    cited = sorted({d for q in dev_ids for d in train.qrels[q] if d in train.corpus})
    others = sorted(set(train.corpus) - set(cited))
    sample = sorted(random.Random(seed).sample(others, max(0, min(len(others), dev_corpus - len(cited)))))
    _write_beir(files.dev, train, dev_ids, [*cited, *sample])
    write_json_atomically(
        {
            "source": str(source),
            "seed": seed,
            "dev_share": DEV_SHARE,
            "training_claims": len(training_ids),
            "dev_claims": len(dev_ids),
            "pairs": len(pairs),
            "dev_corpus": len(cited) + len(sample),
            "dev_cited_documents": len(cited),
            "dev_claim_ids": dev_ids,
        },
        files.split,
    )
    return files


def _write_pairs(path: Path, pairs: list[tuple[str, str]]) -> None:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(["sent0", "sent1"])
    writer.writerows(pairs)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, text.getvalue())


def _write_beir(folder: Path, train: BeirDataset, claim_ids: list[str], doc_ids: list[str]) -> None:
    """A BEIR folder of `claim_ids` and `doc_ids` (title and text as the mirror holds them)."""
    with atomic_path(folder) as partial:
        (partial / "qrels").mkdir(parents=True)
        corpus = [{"_id": d, "title": train.corpus[d][0], "text": train.corpus[d][1]} for d in doc_ids]
        (partial / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
        queries = [{"_id": q, "text": train.queries[q]} for q in claim_ids]
        (partial / "queries.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in queries), encoding="utf-8"
        )
        judgements = [f"{q}\t{d}\t{s}" for q in claim_ids for d, s in sorted(train.qrels[q].items())]
        (partial / "qrels" / "dev.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "\n".join(judgements) + "\n", encoding="utf-8"
        )
