#!/usr/bin/env bash
# Issue 36's long run: crammed's recipe (the ablation winner, docs/PRETRAIN.md "Why it plateaued") on rows
# of 256 tokens (16 a step: the same 4 k tokens a step as crammed's 32 x 128; 128- and 256-token rows were
# level in the ablation, and 256 trains every position the grid reads and keeps bert-mlm-4l256's held-out
# rows), 150 M tokens. Rerun this same command to resume: from runs/ if this machine has them, else from
# the committed snapshot in benchmarks/pretrain-resume/ (weights only, learning rate re-warmed).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p runs/pretrain
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} PYTHONUNBUFFERED=1 exec nice -n 10 .venv/bin/python benchmarks/pretrain_mlm.py \
    --name bert-prenorm-4l256 --size 4l256 --arch prenorm --lr 1e-3 --batch 16 --seq-len 256 \
    --dropout 0 --clip 0.5 --max-tokens 150000000 --warmup-frac 0.02 --eval-steps 2000 \
    --snapshot-dir benchmarks/pretrain-resume/bert-prenorm-4l256 "$@"
