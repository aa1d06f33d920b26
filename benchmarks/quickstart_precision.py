"""The quick start in fp32 and in bf16: STS-B dev Spearman, wall time and training sentences/second.

    python benchmarks/quickstart_precision.py [--out outputs/quickstart-precision] [-- --set KEY=VALUE ...]

Runs `lwap train configs/quickstart.yaml` once per precision (same config, seed and data otherwise),
then scores each saved model on STS-B dev in fp32, as a user loading it gets it, so the two precisions
are compared on equal terms. Writes `results.json` beside the runs and prints a Markdown table. The runs
are sequential; on a shared machine, anything else running slows both (say so with the numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "outputs/quickstart-precision"))
    parser.add_argument("extra", nargs="*", help="extra `lwap train` arguments after --")
    args = parser.parse_args()
    out = Path(args.out)
    results = {}
    for precision in ("fp32", "bf16"):
        run_dir = out / precision
        command = [sys.executable, "-m", "lwap", "train", "configs/quickstart.yaml", "--overwrite"]
        command += ["--set", f"output.dir={run_dir}", "--set", f"training.precision={precision}"]
        command += ["--set", "training.progress_bar=false", *args.extra]
        load_before = os.getloadavg()
        subprocess.run(command, cwd=REPO, check=True)
        summary = json.loads((run_dir / "train_summary.json").read_text())
        results[precision] = {
            "dev_spearman_before": summary["dev_spearman_before"],
            "dev_spearman_after": summary["final_model_dev_spearman"],
            "best_step": summary["best_step"],
            "dev_spearman_saved_model_fp32": saved_model_score(run_dir / "model"),
            "wall_time_seconds": summary["wall_time_seconds"],
            "sentences_per_second": summary["sentences_per_second"],
            "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(
        "| precision | dev before | dev after (trainer) | saved model, fp32 eval | wall time | sentences/s |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for precision, r in results.items():
        print(
            f"| {precision} | {r['dev_spearman_before']:.4f} | {r['dev_spearman_after']:.4f} "
            f"(step {r['best_step']}) | {r['dev_spearman_saved_model_fp32']:.4f} | "
            f"{r['wall_time_seconds']:.0f} s | {r['sentences_per_second']:.1f} |"
        )


def saved_model_score(folder: Path) -> float:
    from lwap import load_model
    from lwap.eval.evaluators import stsb_evaluator

    return float(stsb_evaluator("dev")(load_model(folder))["stsb-dev_spearman_cosine"])


if __name__ == "__main__":
    main()
