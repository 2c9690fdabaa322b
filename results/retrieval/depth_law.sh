#!/usr/bin/env bash
# The depth law: layers 1..5 x curricula {dense, mixed} x seeds {0,1,2} at depth 12 (the deepest chain 24
# variables allow beside one distractor chain), 3000 steps of 64, d = 128, 4 heads, RoPE, lr 1e-3. One run holds
# every hop count: dense reads D_max from its per-hop accuracy, mixed (answer-only, the same steps and examples)
# from its per-depth accuracy. Each layer count trains as one ensemble of 6, cheapest first; finished cells are
# kept on a rerun. Then `headlab retrieval depth-law results/retrieval/depth_law` tabulates D_max.
set -euo pipefail
OUT=${OUT:-results/retrieval/depth_law}
start=$(date +%s)
.venv/bin/headlab retrieval sweep --layers "${LAYERS:-1,2,3,4,5}" --depths 12 --curricula dense,mixed \
  --seeds 0,1,2 --steps "${STEPS:-3000}" --batch-size 64 --d-model 128 --distractors 1 --eval-every 250 \
  --eval-n 96 --checkpoint-every 250 --jobs "${JOBS:-1}" --no-progress ${NO_TRAIN:+--no-train} --out "$OUT"
.venv/bin/headlab retrieval depth-law "$OUT" --overwrite
echo "depth_law.sh LAYERS=${LAYERS:-1,2,3,4,5} STEPS=${STEPS:-3000}${NO_TRAIN:+ NO_TRAIN=1}: $(( $(date +%s) - start )) s" >> "$OUT/wall.log"
