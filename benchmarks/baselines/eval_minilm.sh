#!/usr/bin/env bash
# The evaluation baselines quoted in docs/EVALUATION.md: `lwap eval` on the packaged all-MiniLM-L6-v2 with its
# own mean pooling, and with `cls` pooling of the same, untouched backbone. Rerun with
#   bash benchmarks/baselines/eval_minilm.sh [OUTPUT_DIR [more lwap eval options]]
# (default OUTPUT_DIR benchmarks/results/eval-minilm; e.g. add --precision bf16 or --mteb).
# Each run prints its table and wall time; OUTPUT_DIR/<run>/ gets results.json and results.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
out="${1:-benchmarks/results/eval-minilm}"
shift || true
extra=("$@")
mkdir -p "$out"
models="$(mktemp -d)"
trap 'rm -rf "$models"' EXIT

run() {  # run NAME MODEL: time one `lwap eval` and keep its table
  local name=$1 model=$2 start end
  start=$(date +%s.%N)
  lwap eval "$model" --output "$out/$name" --no-progress "${extra[@]}" | tee "$out/$name.txt"
  end=$(date +%s.%N)
  printf 'wall time: %.0f s (nproc %s; options: %s)\n' "$(echo "$end - $start" | bc)" "$(nproc)" "${extra[*]:-none}" \
    | tee -a "$out/$name.txt"
}

run mean sentence-transformers/all-MiniLM-L6-v2
# cls pooling of the untouched backbone; max_seq_length 256 as in the packaged model's own config
# (the bare transformer folder would default to 512).
python -c "
from lwap import build_model
build_model('sentence-transformers/all-MiniLM-L6-v2', 'cls', max_seq_length=256).save('$models/minilm-cls')
" 2>/dev/null
run cls "$models/minilm-cls"
