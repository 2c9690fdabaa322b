#!/usr/bin/env bash
# Two layers at depth 4 for twice the depth law's steps (6000 of 64; everything else as results/retrieval/depth_law.sh):
# at 3000 steps two of three 2-layer seeds were still on the one-lookup plateau and the third leaving it, so the
# depth law's L2 cell measured the budget. Does it reach the 4 hops that 3^L/2 = 4.5 allows when given longer?
set -euo pipefail
OUT=${OUT:-results/retrieval/depth_law_long}
start=$(date +%s)
.venv/bin/headlab retrieval sweep --layers 2 --depths 4 --curricula dense --seeds 0,1,2 --init fan-in --untied \
  --steps 6000 --batch-size 64 --d-model 128 --distractors 1 --eval-every 250 --eval-n 96 --checkpoint-every 250 \
  --jobs 1 --no-progress ${NO_TRAIN:+--no-train} --out "$OUT"
.venv/bin/headlab retrieval depth-law "$OUT" --overwrite
echo "depth_law_long.sh${NO_TRAIN:+ NO_TRAIN=1}: $(( $(date +%s) - start )) s" >> "$OUT/wall.log"
