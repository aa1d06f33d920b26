#!/usr/bin/env bash
# One GPU run: the gpu test tier and the GPU training benchmark, then the GPU section of docs/BENCHMARKS.md.
#
#   benchmarks/gpu_check.sh OUTDIR
#
# Writes OUTDIR/gpu_check.log (everything printed), OUTDIR/gpu_tests.xml (the gpu tier, JUnit),
# OUTDIR/gpu_speed.json (benchmarks/gpu_speed.py) and OUTDIR/BENCHMARKS.md (docs/BENCHMARKS.md with the
# GPU section written by benchmarks/gpu_report.py; rerun that alone with: python benchmarks/gpu_report.py
# OUTDIR). Under 8 minutes on one H200. On a machine without a package index, run
# benchmarks/gpu_wheels.sh beforehand where there is one, and bring .whl/ and .gpu/ along: the wheels
# are installed into a private folder, and lwap itself is built from this working tree (no dependencies
# pulled). Uses the machine's own torch, transformers and sentence-transformers (>= 6.0.1).
set -uo pipefail
OUT=${1:?usage: benchmarks/gpu_check.sh OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
exec > >(tee "$OUT/gpu_check.log") 2>&1
PY=${PYTHON:-python3}
SITE=${LWAP_GPU_SITE:-/tmp/lwap-gpu-site}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
start=$(date +%s)

rm -rf "$SITE"
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || exit 1
fi
# lwap from this working tree (its package-dir layout needs a real install, not just PYTHONPATH)
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir --target "$SITE" . || exit 1
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
# the checkout's own lwap/ folder must not shadow the installed package (lwap.train lives in train/)
export PYTHONSAFEPATH=1
if [ -d .gpu/tokenizer ]; then export LWAP_TEST_TOKENIZER="$PWD/.gpu/tokenizer"; fi

"$PY" - <<'PY' || exit 1
import sys

import torch

import datasets, lwap, pyarrow, sentence_transformers, transformers

print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), transformers "
      f"{transformers.__version__}, sentence-transformers {sentence_transformers.__version__}, datasets "
      f"{datasets.__version__}, pyarrow {pyarrow.__version__}, lwap from {lwap.__file__}")
if not torch.cuda.is_available():
    sys.exit("gpu_check: torch sees no CUDA GPU")
print("GPU:", torch.cuda.get_device_name(), f"({torch.cuda.device_count()} visible)")
if int(pyarrow.__version__.split(".")[0]) < 21:
    sys.exit(f"gpu_check: datasets needs pyarrow >= 21, this machine has {pyarrow.__version__}: "
             "run benchmarks/gpu_wheels.sh --with-pyarrow and bring .whl/ again")
PY

echo "== gpu test tier"
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} timeout 240 "$PY" -m pytest -m gpu -q -p no:cacheprovider -rfEs \
  --junitxml="$OUT/gpu_tests.xml" tests/test_gpu.py
tier=$?
echo "gpu tier exit code $tier after $(( $(date +%s) - start )) s"

echo "== GPU training benchmark"
# 450 s for tier + benchmark; no lever (torch.compile: about a minute or two) starts in the last 120 s
left=$(( 450 - ($(date +%s) - start) ))
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} timeout "$left" "$PY" benchmarks/gpu_speed.py \
  --out "$OUT/gpu_speed.json" --budget $(( left - 120 ))
bench=$?
echo "benchmark exit code $bench after $(( $(date +%s) - start )) s"

if [ -f "$OUT/gpu_speed.json" ]; then
  PYTHONSAFEPATH= "$PY" benchmarks/gpu_report.py "$OUT" && cp docs/BENCHMARKS.md "$OUT/BENCHMARKS.md"
fi
echo "gpu_check: done in $(( $(date +%s) - start )) s; tier $tier, benchmark $bench; files in $OUT"
[ "$tier" -eq 0 ] && [ "$bench" -eq 0 ]
