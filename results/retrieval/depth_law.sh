#!/usr/bin/env bash
# The depth law at this machine's budget, with the recipe that leaves the one-lookup plateau (every linear
# N(0, 1/fan_in), an output head of its own: results/retrieval/init): 3000 steps of 64, d = 128, 4 heads, RoPE,
# lr 1e-3, one distractor chain. Depth 8 stays on the plateau at 2 layers in 3000 steps (results/retrieval/init/
# dense), so the grid trains depth 4 (8 pairs), where 3^L/2 is 1.5 at one layer and 4.5 at two:
#   1. dense targets, layers 1..4 x seeds 0, 1, 2 (D_max per run from its per-hop accuracy);
#   2. answer-only (mixed) at the same steps and examples, layers 1..4, seed 0 only (the depth map's 0 of 102
#      answer-only runs at D >= 2 say what more seeds would buy; the machine time went to stage 3);
#   3. depth 8 at 3 layers, dense, seeds 0, 1, 2 (OUT_D8): three layers solve all of depth 4, so is 3 layers'
#      D_max above 4, where 3^L/2 = 13.5 allows it?
# Finished cells are kept on a rerun; each stage's wall time goes to wall.log. The committed run trained stage 1
# with JOBS=2, then stages 2 and 3 side by side with JOBS=1, one core each (their walls overlap).
set -euo pipefail
OUT=${OUT:-results/retrieval/depth_law}
OUT_D8=${OUT_D8:-results/retrieval/depth_law_d8}
FLAGS="--init fan-in --untied --steps ${STEPS:-3000} --batch-size 64 --d-model 128 --distractors 1 --eval-every 250
  --eval-n 96 --checkpoint-every 250 --jobs ${JOBS:-2} --no-progress ${NO_TRAIN:+--no-train}"
stage() { local name=$1 out=$2; shift 2; local start=$(date +%s)
  OMP_NUM_THREADS=1 .venv/bin/headlab retrieval sweep "$@" $FLAGS --out "$out"
  echo "depth_law.sh $name${NO_TRAIN:+ NO_TRAIN=1}: $(( $(date +%s) - start )) s" >> "$out/wall.log"; }
[ -n "${SKIP_DENSE:-}" ] || stage dense "$OUT" --layers 1,2,3,4 --depths 4 --curricula dense --seeds 0,1,2
stage mixed "$OUT" --layers 1,2,3,4 --depths 4 --curricula mixed --seeds 0
stage d8 "$OUT_D8" --layers 3 --depths 8 --curricula dense --seeds 0,1,2
# one sweep.json / sweep.md / success map over both curricula (trains nothing), then the depth laws
.venv/bin/headlab retrieval sweep --layers 1,2,3,4 --depths 4 --curricula dense,mixed --seeds 0,1,2 $FLAGS \
  --no-train --out "$OUT" > /dev/null
.venv/bin/headlab retrieval depth-law "$OUT" --overwrite
.venv/bin/headlab retrieval depth-law "$OUT_D8" --overwrite
# one law over this grid, the long 2-layer runs (depth_law_long.sh) and the depth-8 runs: results/retrieval/law
.venv/bin/headlab retrieval depth-law "$OUT" results/retrieval/depth_law_long "$OUT_D8" --out results/retrieval/law \
  --overwrite
