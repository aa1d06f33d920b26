"""Encode a corpus with a model, save the embeddings, and search them with a few queries.

    python examples/encoding/encode_and_search.py
    python examples/encoding/encode_and_search.py --model outputs/examples/train-on-pairs/run/model

The model is any sentence-transformers model: a backbone id, or a folder lwap trained (loaded by
lwap.load_model, which checks what the folder holds before loading it). The command line does the
encoding step too: `lwap encode MODEL --input corpus.txt --output embeddings.npy --normalize`
(docs/ENCODING.md, which also covers fewer dimensions or layers, bf16 and OpenVINO).
"""

import argparse
from pathlib import Path

import numpy as np
from sentence_transformers.util import semantic_search

import lwap

CORPUS = [
    "Click 'Forgot password' on the sign-in page and follow the email.",
    "Invoices are listed under Billing > History and can be downloaded as PDF.",
    "Open Billing > Plan and choose 'Cancel subscription'.",
    "The app is available for both Android and iOS.",
    "Settings > Privacy > Export creates a ZIP archive of all your data.",
    "Your bank refused the payment; check the card's limit and expiry date.",
    "Enable two-factor authentication under Settings > Security.",
    "Our support team answers every weekday from 8 am to 6 pm.",
]
QUERIES = ["I can't log in, I forgot my password", "Is there an iPhone app?", "When can I reach support?"]

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default=lwap.DEFAULT_BACKBONE, help="hub id or model folder")
parser.add_argument("--output", default="outputs/examples/encode-and-search", help="corpus and embeddings")
parser.add_argument("--top-k", type=int, default=3)
args = parser.parse_args()

out = Path(args.output)
out.mkdir(parents=True, exist_ok=True)
(out / "corpus.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")  # lwap encode's input format

model = lwap.load_model(args.model)
corpus = (out / "corpus.txt").read_text(encoding="utf-8").splitlines()
embeddings = model.encode(corpus, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
np.save(out / "embeddings.npy", embeddings.astype(np.float32))  # one float32 row a line, as lwap encode
print(f"encoded {len(corpus)} texts into {embeddings.shape[1]} dimensions: {out / 'embeddings.npy'}")

# search: cosine similarity of each query to every row (the rows are unit vectors), best first
stored = np.load(out / "embeddings.npy")
queries = model.encode(QUERIES, normalize_embeddings=True, convert_to_numpy=True)
for query, hits in zip(QUERIES, semantic_search(queries, stored, top_k=args.top_k), strict=True):
    print(f"\n{query}")
    for hit in hits:
        print(f"  {hit['score']:.3f}  {corpus[hit['corpus_id']]}")
