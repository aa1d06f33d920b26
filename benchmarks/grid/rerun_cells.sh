#!/usr/bin/env bash
# What a re-run reproduces (docs/RESULTS.md): the unsupervised `lwap` seed-0 cell of each backbone, run
# twice with identical settings (one thread each) into scratch folders under outputs/reruns/, evaluated
# on the 7 STS tasks (the figure compared is their average). The committed cells are not touched; the
# two runs' cell files are copied to benchmarks/results/compare/reruns/<backbone>/run<N>.json, which
# `python benchmarks/grid/compare_poolers.py report` reads. Resumable: rerunning skips finished runs.
#   bash benchmarks/grid/rerun_cells.sh [all-MiniLM-L6-v2 | minilm-l6-mlm]   (default: both, one after the other)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
python=${PYTHON:-python}
declare -A BACKBONES=(
  [all-MiniLM-L6-v2]="sentence-transformers/all-MiniLM-L6-v2"
  [minilm-l6-mlm]="../shared/models/minilm-l6-mlm"
)
declare -A CELLS=(
  [all-MiniLM-L6-v2]="unsup/lwap-seed0.json"
  [minilm-l6-mlm]="backbones/minilm-l6-mlm/unsup/lwap-seed0.json"
)
names=("$@"); [ ${#names[@]} -gt 0 ] || names=(all-MiniLM-L6-v2 minilm-l6-mlm)
for name in "${names[@]}"; do
  for run in 1 2; do
    scratch="outputs/reruns/$name/run$run"
    "$python" -m lwap compare run --regime unsup --poolers lwap --seeds 0 --tasks sts --no-untouched \
      --backbone "${BACKBONES[$name]}" --results "$scratch" --work-dir "$scratch/work"
    mkdir -p "benchmarks/results/compare/reruns/$name"
    cp "$scratch/${CELLS[$name]}" "benchmarks/results/compare/reruns/$name/run$run.json"
  done
done
