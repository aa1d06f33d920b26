#!/usr/bin/env bash
# Issue 66's budget test (docs/COMPARE.md, "Pre-registered: verdicts with power"): 5 rows x seeds 0-9 on
# bert-prenorm-4l256-sentences supervised, at today's budget (3 epochs) then a long one (10 epochs).
# One cell at a time, resumable: a finished cell is a file in RESULTS_ROOT and is skipped, a stopped cell
# resumes from its last checkpoint. Run it from a worktree at a fixed commit, niced, in the background:
#   nice -n 10 benchmarks/grid/verdict_cells.sh [RESULTS_ROOT] [WORK_ROOT]
set -euo pipefail
cd "$(dirname "$0")/../.."
results=${1:-benchmarks/results/verdicts}
work=${2:-outputs/verdicts}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
grid=(
  --backbone benchmarks/backbones/bert-prenorm-4l256-sentences --regime sup --no-untouched
  --poolers lwap lwap-attn first_last_avg mean cls-mlp --seeds 0 1 2 3 4 5 6 7 8 9
)
for epochs in 3 10; do
  python benchmarks/grid/compare_poolers.py run "${grid[@]}" \
    --results "$results/budget-${epochs}ep" --work-dir "$work/budget-${epochs}ep" \
    --set training.learning_rate=3e-4 --set training.epochs=$epochs --set model.weighted_layer_start=3
done
