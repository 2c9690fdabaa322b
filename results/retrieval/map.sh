#!/usr/bin/env bash
# The depth map: D in {1,2,3,4,6,8} x layers {1,2,3,4} x curricula {none,mixed,chain} x seeds {0,1,2} = 216
# decoders (d=64, 4 heads, RoPE, lr 1e-3), ONE distractor chain (see diagnose.md: with two, depth 3 does not
# learn in 1500 steps, with one it does), 1000 steps of 64 examples: the largest budget 2 CPU cores allowed in
# this session (the paper's 24k x 128 is 48x more examples). Each (layers, depth) trains as one ensemble of 9,
# cheapest first; finished cells are kept on a rerun.
#
# As run (2026-11-30, 2 CPU cores shared with the LLM evaluation): LAYERS=1,2 JOBS=1 (5414 s), LAYERS=3 JOBS=1
# and LAYERS=4 JOBS=1 side by side, the last two stopped after L3-D6 and L4-D4 when the session's compute ran
# out (L3-D8, L4-D6, L4-D8 not run); then NO_TRAIN=1 to aggregate (sweep.json, sweep.md, the two figures).
set -euo pipefail
OUT=${OUT:-results/retrieval/map}
start=$(date +%s)
.venv/bin/headlab retrieval sweep --layers "${LAYERS:-1,2,3,4}" --depths 1,2,3,4,6,8 --curricula none,mixed,chain \
  --seeds 0,1,2 --steps 1000 --batch-size 64 --distractors 1 --eval-every 100 --eval-n 96 --checkpoint-every 100 \
  --jobs "${JOBS:-2}" --no-progress ${NO_TRAIN:+--no-train} --out "$OUT"
echo "map.sh LAYERS=${LAYERS:-1,2,3,4} JOBS=${JOBS:-2}${NO_TRAIN:+ NO_TRAIN=1}: $(( $(date +%s) - start )) s" >> "$OUT/wall.log"
