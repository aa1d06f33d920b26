#!/usr/bin/env bash
# Issue 36's long run: crammed's levers (the ablation winner, docs/PRETRAIN.md "Why it plateaued") with one
# sentence a row (the arm added after the packed long run stayed context-blind at 20 M tokens), 150
# sentences a step (about 4 k tokens) in batches of like length, 128 positions, 150 M tokens. Rerun this
# same command to resume: from runs/ if this machine has them, else from the committed snapshot in
# benchmarks/pretrain-resume/ (weights only, learning rate re-warmed).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p runs/pretrain
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} PYTHONUNBUFFERED=1 exec nice -n 10 .venv/bin/python benchmarks/pretrain_mlm.py \
    --name bert-prenorm-4l256-sentences --size 4l256 --arch prenorm --lr 1e-3 --batch 150 --seq-len 128 \
    --rows sentence --group-by-length --dropout 0 --clip 0.5 --max-tokens 150000000 --warmup-frac 0.02 \
    --eval-steps 2000 --snapshot-dir benchmarks/pretrain-resume/bert-prenorm-4l256-sentences "$@"
