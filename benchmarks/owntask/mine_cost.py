"""Time and memory of `lwap mine` on SciFact-sized data: the case's training pairs (SciFact train claims →
their cited abstracts) against the whole 5,183-document SciFact corpus, with all-MiniLM-L6-v2.

    python benchmarks/owntask/mine_cost.py [--work outputs/owntask] [--configs fp32:256 bf16:128]

Each configuration (encoding precision : max tokens per text) runs `lwap mine` as its own process (its
peak resident memory is that process's, from `wait4`), one after another; wall time includes loading the
model and reading the data. Writes benchmarks/results/owntask/mine_cost.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO
from benchmarks.owntask.scifact_data import make_files, scifact_folder

RESULTS = REPO / "benchmarks" / "results" / "owntask"
BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"


def measured(command: list[str], log: Path) -> dict[str, float]:
    """Run `command` (stdout and stderr to `log`); its wall time and peak resident memory (MiB)."""
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(command)} failed ({code}); see {log}")
    return {"seconds": round(seconds, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}  # KiB on Linux


def mine_command(pairs: Path, corpus: Path, output: Path, precision: str, length: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "lwap",
        "mine",
        str(pairs),
        "--model",
        BACKBONE,
        "--corpus",
        str(corpus),
        "--output",
        str(output),
        "--overwrite",
        "--precision",
        precision,
        "--max-seq-length",
        str(length),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=REPO / "outputs" / "owntask")
    parser.add_argument("--configs", nargs="+", default=["fp32:256", "bf16:128"], metavar="PRECISION:LENGTH")
    args = parser.parse_args()
    files = make_files(args.work / "full" / "user")  # the SciFact case's own pairs (scifact_case.py)
    corpus = scifact_folder()
    rows = []
    load_at_start = os.getloadavg()
    for config in args.configs:
        precision, length = config.split(":")
        output = args.work / "full" / "mine-cost" / f"mined-{precision}-{length}.csv"
        output.parent.mkdir(parents=True, exist_ok=True)
        print(f"lwap mine, {precision}, {length} tokens ...", flush=True)
        figures = measured(
            mine_command(files.pairs, corpus, output, precision, int(length)), output.with_suffix(".log")
        )
        said = output.with_suffix(".log").read_text(encoding="utf-8").splitlines()
        summary = next((line for line in said if line.startswith("lwap mine: ") and " wrote " in line), "")
        rows.append({"precision": precision, "max_seq_length": int(length), **figures, "lwap_mine": summary})
        print(f"  {figures['seconds']:.0f} s, peak {figures['peak_rss_mib']:.0f} MiB", flush=True)
    import csv
    import json

    import torch

    from lwap.checks.files import write_json_atomically

    with files.pairs.open(newline="", encoding="utf-8") as handle:
        pairs = sum(1 for _ in csv.reader(handle)) - 1
    result = {
        "what": "lwap mine: SciFact training pairs vs the whole SciFact corpus, all-MiniLM-L6-v2, 1 negative",
        "pairs_file": str(files.pairs),
        "pairs": pairs,
        "corpus": str(corpus),
        "runs": rows,
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "load_average_at_start": load_at_start,  # other work on the machine slows every figure
            "load_average_at_end": os.getloadavg(),
            "platform": platform.platform(),
            "torch": torch.__version__,
        },
        "date": time.strftime("%Y-%m-%d"),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_json_atomically(result, RESULTS / "mine_cost.json")
    print(json.dumps(result["machine"]))
    print("| precision | max tokens | wall time (s) | peak memory (MiB) |\n| --- | ---: | ---: | ---: |")
    for row in rows:
        cells = (
            row["precision"],
            row["max_seq_length"],
            f"{row['seconds']:.0f}",
            f"{row['peak_rss_mib']:.0f}",
        )
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
