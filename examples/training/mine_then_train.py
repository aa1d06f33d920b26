"""Mine a hard negative for each of your (question, answer) pairs, then train on the triplets.

    python examples/training/mine_then_train.py
    python examples/training/mine_then_train.py --backbone my-encoder/ --output outputs/my-run --max-steps 50

A hard negative (an answer that looks right but is not) teaches more than the batch's other answers. This
mines one per pair from a corpus of answers with the backbone, as `lwap mine pairs.csv --model BACKBONE
--corpus corpus.txt --output mined.csv` does, trains supervised SimCSE on the mined file and keeps the
checkpoint a dev folder of your own (BEIR layout) ranks best. docs/TRAINING.md, "Train on your own data".
"""

import argparse
import csv
import json
from pathlib import Path

import lwap
from lwap.train import train
from lwap.train.config import config_from_dict
from lwap.train.mining import MiningOptions, mine_file, read_inputs

PAIRS = [  # (question, its answer)
    ("How do I reset my password?", "Click 'Forgot password' on the sign-in page and follow the email."),
    ("How do I change my email address?", "Settings > Account > Email changes the address we write to."),
    ("Where is my invoice?", "Invoices are listed under Billing > History and can be downloaded as PDF."),
    ("How do I cancel my subscription?", "Open Billing > Plan and choose 'Cancel subscription'."),
    ("How do I export my data?", "Settings > Privacy > Export creates a ZIP archive of all your data."),
    ("Why was my card declined?", "Your bank refused the payment; check the card's limit and expiry date."),
    ("How do I turn on two-factor login?", "Enable two-factor authentication under Settings > Security."),
    ("How do I delete my account?", "Settings > Account > Delete removes the account and its data."),
]
OTHER_ANSWERS = [  # the rest of the help centre: where the negatives come from
    "Passwords must be at least 12 characters long and contain a number.",
    "Email notifications can be switched off under Settings > Notifications.",
    "Prices on invoices include VAT where it applies.",
    "Pausing a subscription keeps your data and stops billing for up to three months.",
    "We accept Visa, Mastercard and PayPal.",
    "A deleted project can be restored from the trash within 30 days.",
]
DEV = {"I forgot my password, what now?": 0, "Can I get my bill as a PDF?": 2, "How can I stop paying?": 3}

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--backbone", default=lwap.DEFAULT_BACKBONE, help="hub id or folder")
parser.add_argument("--output", default="outputs/examples/mine-then-train", help="the data and the run")
parser.add_argument("--max-steps", type=int, default=-1, help="> 0: stop after N steps (else 3 epochs)")
args = parser.parse_args()

out = Path(args.output)
(out / "dev" / "qrels").mkdir(parents=True, exist_ok=True)
with open(out / "pairs.csv", "w", newline="", encoding="utf-8") as handle:
    csv.writer(handle).writerows([("sent0", "sent1"), *PAIRS])
answers = [answer for _, answer in PAIRS] + OTHER_ANSWERS
(out / "corpus.txt").write_text("\n".join(answers) + "\n", encoding="utf-8")  # one text a line
# the dev folder in BEIR layout: every answer a document, DEV's questions, and the answer each should find
documents = [json.dumps({"_id": f"a{i}", "text": text}) for i, text in enumerate(answers)]
questions = [json.dumps({"_id": f"q{i}", "text": text}) for i, text in enumerate(DEV)]
judged = [f"q{i}\ta{answer}\t1" for i, answer in enumerate(DEV.values())]
for name, lines in (("corpus.jsonl", documents), ("queries.jsonl", questions),
                    ("qrels/dev.tsv", ["query-id\tcorpus-id\tscore", *judged])):
    (out / "dev" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

# candidates are the corpus' texts; an anchor's own answer, and anything scoring within 5% of it (likely
# a right answer nobody labelled), is never its negative
inputs = read_inputs(str(out / "pairs.csv"), corpus_path=str(out / "corpus.txt"))  # read and checked first
mined = mine_file(str(out / "pairs.csv"), inputs, lwap.load_model(args.backbone), out / "mined.csv",
                  MiningOptions(num_negatives=1, relative_margin=0.05))
print(f"mined {mined.rows} triplets, the first two:")
print("\n".join((out / "mined.csv").read_text(encoding="utf-8").splitlines()[:3]))

# The same keys as a YAML config of `lwap train` (every key and its default: `lwap train --show-config`)
config = config_from_dict({
    "output": {"dir": str(out / "run"), "overwrite": True, "save_steps": 2},  # a rerun replaces it
    "model": {"backbone": args.backbone, "pooling": "lwap", "lwap_start": "native"},  # starts as the backbone
    "data": {"train": str(out / "mined.csv")},  # sent0, sent1, hard_neg: lwap's default columns
    "objective": {"name": "sup_simcse"},
    "training": {"epochs": 3, "max_steps": args.max_steps, "per_device_batch_size": 4,
                 "learning_rate": 5e-5, "drop_last": False},
    "eval": {"dev": str(out / "dev"), "dev_metric": "ndcg@10", "eval_steps": 2},  # its best step is kept
})
summary = train(config)  # prints the dev nDCG@10 before and after; also in OUT/run/train_summary.json
print(f"kept step {summary['final_model_step']} of {summary['steps']}: {summary['model_dir']}")
if summary["dev_score_moved"] is False:  # the backbone already ranks these few easy dev answers first
    print("the dev score had no room to move here: a larger, harder dev set of your own task will have")
