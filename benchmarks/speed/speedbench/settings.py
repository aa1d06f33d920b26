"""What every part of the speed benchmark shares: the setup (model, batch, length, data) and the levers."""

from __future__ import annotations

import gzip
import itertools

from benchmarks import REPO

BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"
QUICKSTART = REPO / "configs/quickstart.yaml"
WIKI = "wiki/wiki_sentences_1m.txt.gz"
BATCH, MAX_LENGTH, TRAIN_SENTENCES = 64, 32, 16_000
LEVERS = [  # the `lwap train` speed options the "+ levers" rows switch on (bf16 only)
    "training.keep_freed_memory=true",
    "training.batch_sampler=length_grouped",
    "training.attention=eager",
    "training.fast_dropout=true",
]
PROFILED = ("lwap/lwap/bf16", "lwap/lwap+levers/bf16", "stock/bf16", "minimal/bf16")
NO_LEVERS = [  # and what the other `lwap train` rows use, whatever configs/quickstart.yaml ships
    "training.keep_freed_memory=false",
    "training.batch_sampler=random",
    "training.attention=sdpa",
    "training.fast_dropout=false",
]


def read_sentences(n: int) -> list[str]:
    from lwap.paths import data_dir

    with gzip.open(data_dir() / WIKI, "rt", encoding="utf-8") as handle:
        lines = (line.rstrip("\n") for line in handle)
        return list(itertools.islice((line for line in lines if line.strip()), n))
