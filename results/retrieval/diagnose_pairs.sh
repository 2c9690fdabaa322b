#!/usr/bin/env bash
# Follow-up of diagnose.sh (where one distractor instead of two made depth 3 learnable): is it the depth, or
# the number of (variable, reference) pairs to search, D x (1 + distractors)? Chain curriculum, 2 layers,
# 2 seeds, 1500 steps.
set -euo pipefail
OUT=${OUT:-results/retrieval/diagnose}
COMMON=(--layers 2 --seeds 0,1 --steps 1500 --eval-every 100 --eval-n 128 --checkpoint-every 500 --jobs 1
        --no-progress)
run() { local name=$1; shift; .venv/bin/headlab retrieval sweep "${COMMON[@]}" "$@" --out "$OUT/$name" > "$OUT/$name.log" 2>&1 || echo "$name failed"; }
run pairs3-D3-dist0 --depths 3 --distractors 0 --curricula chain
run pairs6-D6-dist0 --depths 6 --distractors 0 --curricula chain
run pairs6-D2-dist2 --depths 2 --distractors 2 --curricula chain
run pairs8-D2-dist3 --depths 2 --distractors 3 --curricula chain
run pairs8-D4-dist1 --depths 4 --distractors 1 --curricula chain
