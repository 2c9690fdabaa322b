#!/usr/bin/env bash
# The order claim pairwise (rule retrieval.pair-order, declared before these runs): two recipes, six new seeds
# each (10..15; the committed runs used 0, 1, 2), every run analyzed, so each role's first emergence step is read
# at the 250-step checkpoints:
#   L3-D4-dense: three layers, depth 4, dense targets (the docs' deep recipe);
#   L2-D2-chain: two layers, depth 2, chain curriculum (the two-layer lookup).
# Both use depth_law.sh's recipe (fan-in, untied, d = 128, 4 heads, one distractor chain, batch 64, lr 1e-3,
# 3000 steps). A stopped cell resumes (headlab retrieval sweep keeps finished runs and resumes the others); a run
# analyzed already is kept. Wall time per stage goes to order/wall.log. Run from the repository's root.
set -euo pipefail
HERE=${HERE:-results/retrieval/order}
SEEDS=${SEEDS:-10,11,12,13,14,15}
mkdir -p "$HERE"
cell() {  # L D curriculum
    local L=$1 D=$2 C=$3 out t0
    out="$HERE/L$L-D$D-$C"
    t0=$(date +%s)
    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/headlab retrieval sweep --layers "$L" --depths "$D" --curricula "$C" \
        --seeds "$SEEDS" --init fan-in --untied --steps "${STEPS:-3000}" --batch-size 64 --d-model 128 \
        --distractors 1 --eval-every 250 --eval-n 96 --checkpoint-every 250 --jobs 1 --no-progress --out "$out"
    for run in "$out"/L*-s*; do
        [ -f "$run/summary.json" ] && [ ! -f "$run/analyze/analyze.json" ] || continue
        OMP_NUM_THREADS=1 nice -n 10 .venv/bin/headlab retrieval analyze "$run"
    done
    echo "order.sh L$L-D$D-$C (seeds $SEEDS): $(( $(date +%s) - t0 )) s this sitting" >> "$HERE/wall.log"
}
export -f cell
export HERE SEEDS
printf '3 4 dense\n2 2 chain\n' | xargs -P "${JOBS:-2}" -L 1 bash -c 'set -euo pipefail; cell "$0" "$1" "$2"'
.venv/bin/headlab verdicts results
