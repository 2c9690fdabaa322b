#!/usr/bin/env bash
# Why does depth 3 fail? One knob at a time from the sweep's defaults (2 layers, d=64, 4 heads, RoPE, lr 1e-3,
# warm-up 100, batch 64, 2 distractors, no separator), chain curriculum, depth 3, 2 seeds, 1500 steps each.
# Each variant is one `headlab retrieval sweep` into results/retrieval/diagnose/<variant>/ (an ensemble of its
# 2 seeds); a finished variant is reused on a rerun. Wall time per variant is in its sweep.json.
set -euo pipefail
OUT=${OUT:-results/retrieval/diagnose}
COMMON=(--layers 2 --depths 3 --curricula chain --seeds 0,1 --steps 1500 --eval-every 100 --eval-n 128
        --checkpoint-every 500 --jobs 1 --no-progress)
run() { local name=$1; shift; .venv/bin/headlab retrieval sweep "${COMMON[@]}" "$@" --out "$OUT/$name" > "$OUT/$name.log" 2>&1 || echo "$name failed"; }
mkdir -p "$OUT"
run base
run separator --separator
run lr3e-4 --lr 3e-4
run lr3e-3-warm300 --lr 3e-3 --warmup-steps 300
run heads8 --n-heads 8
run heads2 --n-heads 2
run learned-pos --positions learned
run distractors1 --distractors 1
run d128 --d-model 128
run batch128 --batch-size 128
