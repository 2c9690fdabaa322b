#!/usr/bin/env bash
# The init plateau: the same cells as before, with every linear weight N(0, 1/fan_in) and an output head of its
# own (--init fan-in --untied) instead of GPT-2's N(0, 0.02^2) everywhere and a head tied to the embedding.
# 1. the depth map's D = 1 cells (1000 steps of 64, d = 64, one distractor chain; 0/3 at every layer count
#    and curriculum in results/retrieval/map), 2. the dense pilot's depth 8 (results/retrieval/dense_pilot:
#    hop 1 only at 2 layers) at 2 and 3 layers, dense and answer-only (mixed) at the same steps.
# One thread; each stage's wall time goes to wall.log.
set -euo pipefail
OUT=${OUT:-results/retrieval/init}
FLAGS="--init fan-in --untied --no-progress"
stage() { local name=$1; shift; local start=$(date +%s)
  OMP_NUM_THREADS=1 .venv/bin/headlab retrieval sweep "$@" $FLAGS --jobs 1 --out "$OUT/$name"
  echo "$name: $(( $(date +%s) - start )) s" >> "$OUT/wall.log"; }
stage d1 --layers 1,2 --depths 1 --curricula none,mixed,chain --seeds 0,1,2 --steps 1000 --batch-size 64 \
  --distractors 1 --eval-every 100 --eval-n 96 --checkpoint-every 100
stage dense --layers 2,3 --depths 8 --curricula dense,mixed --seeds 0 --steps 3000 --batch-size 64 --d-model 128 \
  --distractors 1 --eval-every 250 --eval-n 96 --checkpoint-every 250
.venv/bin/headlab retrieval depth-law "$OUT/dense" --overwrite
# 3. depth 3 (6 pairs, the length the diagnosis found learnable), 2 and 3 layers, dense, two seeds, with
#    checkpoints every 100 steps for the hop labels' emergence (run beside stage 2).
stage dense-d3 --layers 2,3 --depths 3 --curricula dense --seeds 0,1 --steps 3000 --batch-size 64 --d-model 128 \
  --distractors 1 --eval-every 100 --eval-n 96 --checkpoint-every 100
.venv/bin/headlab retrieval depth-law "$OUT/dense-d3" --overwrite
