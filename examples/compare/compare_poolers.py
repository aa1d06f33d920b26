"""Which pooler to train on your backbone: each one trained with one budget, data order and seeds, then
evaluated alike, with verdicts judged against the seed-to-seed spread (`lwap compare`).

    python examples/compare/compare_poolers.py
    python examples/compare/compare_poolers.py --backbone my-encoder/ --poolers cls mean lwap --seeds 0 1 2

Each cell (pooler, seed) is `lwap train compare/unsup-minilm` (unsupervised SimCSE on Wikipedia sentences,
200 steps of batch 64) with only the pooler, the seed and the folder changed, then `lwap eval` of the kept
model on the STS sets and SciFact; the report is RESULTS.md in --output. A cell takes minutes on a CPU
(most of it the evaluation): `--tasks sts` leaves SciFact out. The evaluation sets come from the data
mirror ($LWAP_DATA_DIR) or the hub (docs/DATA.md). A stopped run resumes where it stopped.

There is no Python API for the grid (each cell is a training process of its own): this runs the command,
as you would. docs/COMPARE.md describes the cells, the rows, the report and its verdicts.
"""

import argparse
import subprocess
import sys
from pathlib import Path

import lwap

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--backbone", default=lwap.DEFAULT_BACKBONE, help="hub id or folder")
parser.add_argument("--poolers", nargs="+", default=["mean", "lwap"], help="model.pooling values")
parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="the verdicts want 3 or more")
parser.add_argument("--tasks", choices=("all", "sts"), default="all")
parser.add_argument("--output", default="outputs/examples/compare-poolers", help="cells, work and report")
parser.add_argument("--max-steps", type=int, default=None, help="a smaller budget (evaluated at its end)")
args = parser.parse_args()

results = Path(args.output)
results.mkdir(parents=True, exist_ok=True)
# a rows file: what the grid plans (the report counts these cells as the grid) and rows of your own, a
# pooler with settings, e.g.   rows: {lwap-attn: {pooling: lwap, set: [model.lwap_output=attention]}}
(results / "rows.yaml").write_text(
    f"planned: [{', '.join(args.poolers)}]\nseeds: [{', '.join(map(str, args.seeds))}]\n", encoding="utf-8"
)
lwap_compare = [sys.executable, "-m", "lwap", "compare"]
where = ["--results", str(results), "--rows", str(results / "rows.yaml")]
run = [*lwap_compare, "run", "--regime", "unsup", "--backbone", args.backbone, *where, "--tasks", args.tasks]
if args.max_steps is not None:  # --set KEY=VALUE changes every cell's budget alike (recorded in each cell)
    for setting in ("training.max_steps", "eval.eval_steps", "output.save_steps"):
        run += ["--set", f"{setting}={args.max_steps}"]

print("$", " ".join(run[2:]), flush=True)
subprocess.run(run, check=True)  # also evaluates the untouched backbone once, as a reference row
subprocess.run([*lwap_compare, "report", *where], check=True)

report = (results / "RESULTS.md").read_text(encoding="utf-8")
grid = report[report.index("Grid: "):]  # this backbone's grid: its table and the paired verdicts
print(grid.split("\n## ")[0], f"\n... the whole report: {results / 'RESULTS.md'}")
