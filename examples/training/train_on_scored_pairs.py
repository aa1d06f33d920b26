"""Train on pairs scored for similarity (STS-style ratings, relevance grades) with CoSENT, AnglE or cosine.

    python examples/training/train_on_scored_pairs.py
    python examples/training/train_on_scored_pairs.py --loss angle --backbone my-encoder/ --max-steps 50

Writes scored sentence pairs (0 = unrelated ... 5 = same meaning) as TSV files with a header, trains on them
with sentence-transformers' CoSENTLoss, AnglELoss or CosineSimilarityLoss (objective scored_pairs), and keeps
the checkpoint whose cosines rank the held-out dev pairs best (Spearman). docs/TRAINING.md, "Train on
scored pairs".
"""

import argparse
import csv
from pathlib import Path

import lwap
from lwap.train import train
from lwap.train.config import config_from_dict

TRAIN = [  # (sentence1, sentence2, score on 0-5): a few say nearly the same words and not the same thing
    ("A man is playing a guitar.", "Someone plays an acoustic guitar.", 4.6),
    ("A man is playing a guitar.", "A man is playing a violin.", 1.6),
    ("A woman is riding a horse.", "A woman rides a brown horse on the beach.", 4.0),
    ("A woman is riding a horse.", "A horse is eating hay in a barn.", 1.6),
    ("The cat sleeps on the sofa.", "A cat is asleep on the couch.", 5.0),
    ("The cat sleeps on the sofa.", "The dog sleeps on the sofa.", 1.4),
    ("The stock market fell sharply today.", "Shares dropped steeply on Monday.", 3.8),
    ("The stock market fell sharply today.", "The stock market rose sharply today.", 1.0),
    ("The shop opens at nine.", "The store starts trading at 9 am.", 4.8),
    ("The shop opens at nine.", "The shop closes at nine.", 1.2),
    ("The train was delayed by an hour.", "The train arrived sixty minutes late.", 4.8),
    ("The train was delayed by an hour.", "The plane took off on time.", 0.6),
]
DEV = [  # held out: the checkpoint kept is the one whose cosines rank these as their scores do
    ("A boy is swimming in a pool.", "A child swims in the water.", 4.2),
    ("A boy is swimming in a pool.", "A boy is climbing a tree.", 1.0),
    ("A man is playing a flute.", "A man is playing a piano.", 1.6),
    ("The bakery opens at seven.", "The bakery starts business at 7 am.", 4.8),
    ("The bakery opens at seven.", "The bakery closes at seven.", 1.2),
    ("Two dogs run across a field.", "Dogs are running on the grass.", 4.0),
    ("Two dogs run across a field.", "Two cats run across a field.", 1.4),
    ("The company reported higher profits.", "Profits rose at the firm.", 4.4),
    ("The company reported higher profits.", "The company reported lower profits.", 1.0),
]

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--backbone", default=lwap.DEFAULT_BACKBONE, help="hub id or folder")
parser.add_argument("--output", default="outputs/examples/train-on-scored-pairs", help="the data and the run")
parser.add_argument("--loss", choices=("cosent", "angle", "cosine"), default="cosent")
parser.add_argument("--max-steps", type=int, default=-1, help="> 0: stop after N steps (else 4 epochs)")
args = parser.parse_args()

out = Path(args.output)
out.mkdir(parents=True, exist_ok=True)
for name, rows in (("train.tsv", TRAIN), ("dev.tsv", DEV)):
    with open(out / name, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, delimiter="\t").writerows([("sentence1", "sentence2", "score"), *rows])

# The same keys as a YAML config of `lwap train` (every key and its default: `lwap train --show-config`)
config = config_from_dict({
    "output": {"dir": str(out / "run"), "overwrite": True, "save_steps": 2},  # a rerun replaces it
    "model": {"backbone": args.backbone, "pooling": "lwap", "lwap_start": "native"},  # starts as the backbone
    "data": {"train": str(out / "train.tsv"), "scored_columns": ["sentence1", "sentence2", "score"],
             "score_range": [0, 5]},  # mapped to [0, 1]; null: the data's own min and max
    "objective": {"name": "scored_pairs", "scored_loss": args.loss},
    "training": {"epochs": 4, "max_steps": args.max_steps, "per_device_batch_size": 4,
                 "learning_rate": 5e-5, "warmup_ratio": 0.1, "drop_last": False},
    # your scored dev pairs pick the checkpoint kept (columns: eval.dev_columns, the same three names)
    "eval": {"dev": str(out / "dev.tsv"), "eval_steps": 2},
})
summary = train(config)  # prints the dev Spearman before and after; also in OUT/run/train_summary.json

model = lwap.load_model(summary["model_dir"])  # a plain sentence-transformers model
for first, second, score in DEV[3:5]:  # the same words, not the same meaning: which cosine is higher?
    cosine = model.similarity(model.encode([first]), model.encode([second])).item()
    print(f"{cosine:.3f} cosine, rated {score}: {first} / {second}")
