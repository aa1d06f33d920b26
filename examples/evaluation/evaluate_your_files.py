"""Score a model on files of your own: scored pairs (cosine Spearman) and a search set in BEIR layout.

    python examples/evaluation/evaluate_your_files.py
    python examples/evaluation/evaluate_your_files.py --model outputs/examples/train-on-pairs/run/model

Writes a scored pairs TSV and a small BEIR folder, and evaluates with lwap.eval.evaluate_model, what
`lwap eval MODEL --tasks pairs.tsv my-search/ --output eval/` runs. Name `sts` or `scifact` among the
tasks for the standard sets as well (docs/EVALUATION.md).
"""

import argparse
import csv
import json
from pathlib import Path

import lwap
from lwap.eval import evaluate_model

PAIRS = [  # (sentence1, sentence2, a similarity score on any scale: here 0-5)
    ("A man is playing a guitar.", "Someone plays an acoustic guitar.", 4.6),
    ("A man is playing a guitar.", "A man is slicing an onion.", 0.4),
    ("The cat sleeps on the sofa.", "A cat is asleep on the couch.", 5.0),
    ("The cat sleeps on the sofa.", "A dog barks at the mail carrier.", 0.2),
    ("The train was delayed by an hour.", "The train arrived sixty minutes late.", 4.8),
    ("The train was delayed by an hour.", "The plane took off on time.", 1.0),
    ("She is reading a novel.", "A woman reads a book.", 4.0),
    ("She is reading a novel.", "She is writing a letter.", 1.8),
]
DOCUMENTS = {  # id: (title, text)
    "d1": ("Passwords", "Click 'Forgot password' on the sign-in page and follow the email."),
    "d2": ("Invoices", "Invoices are listed under Billing > History and can be downloaded as PDF."),
    "d3": ("Cancelling", "Open Billing > Plan and choose 'Cancel subscription'."),
    "d4": ("Mobile", "The app is available for both Android and iOS."),
    "d5": ("Support", "Our support team answers every weekday from 8 am to 6 pm."),
}
QUERIES = {"q1": ("I forgot my password", "d1"), "q2": ("Where can I download my bill?", "d2"),
           "q3": ("Is there an iPhone app?", "d4"), "q4": ("How do I stop my plan?", "d3")}

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default=lwap.DEFAULT_BACKBONE, help="hub id or model folder")
parser.add_argument("--output", default="outputs/examples/evaluate-your-files", help="the files and results")
args = parser.parse_args()

out = Path(args.output)
search = out / "my-search"  # BEIR layout: corpus.jsonl, queries.jsonl, qrels/test.tsv
(search / "qrels").mkdir(parents=True, exist_ok=True)
with open(out / "pairs.tsv", "w", newline="", encoding="utf-8") as handle:
    csv.writer(handle, delimiter="\t").writerows([("sentence1", "sentence2", "score"), *PAIRS])
documents = [json.dumps({"_id": i, "title": title, "text": text}) for i, (title, text) in DOCUMENTS.items()]
questions = [json.dumps({"_id": i, "text": text}) for i, (text, _) in QUERIES.items()]
judged = [f"{i}\t{document}\t1" for i, (_, document) in QUERIES.items()]  # 1: relevant
for name, lines in (("corpus.jsonl", documents), ("queries.jsonl", questions),
                    ("qrels/test.tsv", ["query-id\tcorpus-id\tscore", *judged])):
    (search / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

results = evaluate_model(
    args.model,
    tasks=[str(out / "pairs.tsv"), str(search)],  # a file is a scored pairs task, a folder a search task
    pairs_columns=("sentence1", "sentence2", "score"),
    output_dir=out / "eval",  # results.json (every figure) and results.md
    overwrite=True,  # a rerun replaces the files the last one wrote
)
for name, scores in results["pairs"].items():
    print(f"{name}: cosine Spearman x 100 {scores['score']:.2f} ({scores['pairs']} pairs)")
for name, scores in results["search"].items():
    print(f"{name}: nDCG@10 {scores['ndcg@10']:.2f}, MRR@10 {scores['mrr@10']:.2f} (x 100)")
print(f"written: {', '.join(results['files'])}")
