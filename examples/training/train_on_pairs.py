"""Train a sentence encoder on your own (anchor, positive) pairs: supervised SimCSE with LWAP pooling.

    python examples/training/train_on_pairs.py
    python examples/training/train_on_pairs.py --backbone my-encoder/ --output outputs/my-run --max-steps 50

Writes a few question/answer pairs as a CSV (header sent0,sent1: lwap's default columns), trains on them
with in-batch negatives, checks STS-B dev before and after, and encodes with the saved model. Your own
pairs: any format docs/TRAINING.md lists ("Train on your own data"); hard negatives and a dev set of your
own that picks the checkpoint: mine_then_train.py.
"""

import argparse
import csv
from pathlib import Path

import lwap
from lwap.train import train
from lwap.train.config import config_from_dict

PAIRS = [  # (a question, the answer that should embed close to it)
    ("How do I reset my password?", "Click 'Forgot password' on the sign-in page and follow the email."),
    ("Can I change my username?", "Usernames can be changed once a month under Settings > Profile."),
    ("Where is my invoice?", "Invoices are listed under Billing > History and can be downloaded as PDF."),
    ("How do I cancel my subscription?", "Open Billing > Plan and choose 'Cancel subscription'."),
    ("Is there a mobile app?", "Yes, the app is available for both Android and iOS."),
    ("How do I export my data?", "Settings > Privacy > Export creates a ZIP archive of all your data."),
    ("Why was my card declined?", "Your bank refused the payment; check the card's limit and expiry date."),
    ("Can I add a second user?", "Team plans let you invite members under Settings > Team."),
    ("How do I turn on two-factor login?", "Enable two-factor authentication under Settings > Security."),
    ("What are your support hours?", "Our support team answers every weekday from 8 am to 6 pm."),
    ("How do I delete my account?", "Settings > Account > Delete removes the account and its data."),
    ("Do you offer refunds?", "Annual plans are refunded in full within 30 days of purchase."),
]

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--backbone", default=lwap.DEFAULT_BACKBONE, help="hub id or folder")
parser.add_argument("--output", default="outputs/examples/train-on-pairs", help="the data and the run")
parser.add_argument("--max-steps", type=int, default=-1, help="> 0: stop after N steps (else 3 epochs)")
args = parser.parse_args()

out = Path(args.output)
out.mkdir(parents=True, exist_ok=True)
pairs_file = out / "pairs.csv"
with open(pairs_file, "w", newline="", encoding="utf-8") as handle:
    csv.writer(handle).writerows([("sent0", "sent1"), *PAIRS])

# The same keys as a YAML config of `lwap train` (every key and its default: `lwap train --show-config`)
config = config_from_dict({
    "output": {"dir": str(out / "run"), "overwrite": True},  # a rerun replaces the last run
    "model": {"backbone": args.backbone, "pooling": "lwap", "lwap_start": "native"},  # starts as the backbone
    "data": {"train": str(pairs_file), "hard_negative_column": None},  # pairs only, no hard negatives
    "objective": {"name": "sup_simcse"},
    "training": {"epochs": 3, "max_steps": args.max_steps, "per_device_batch_size": 4,
                 "learning_rate": 5e-5, "drop_last": False},
    # STS-B dev (general similarity) before and after training, and the last step kept: a dev set of your
    # own task should pick the checkpoint (mine_then_train.py)
    "eval": {"dev": "stsb", "eval_steps": 1000, "keep_best": False},
})
summary = train(config)  # prints STS-B dev before and after; also in OUT/run/train_summary.json

model = lwap.load_model(summary["model_dir"])  # a plain sentence-transformers model
questions = [question for question, _ in PAIRS[:3]]
scores = model.similarity(model.encode(questions), model.encode([answer for _, answer in PAIRS[:3]]))
print("cosine of each question to the first three answers (the diagonal should be highest):")
print(scores)
