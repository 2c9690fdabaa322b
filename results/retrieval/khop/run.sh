#!/usr/bin/env bash
# The k-hop induction task of Sanford, Hsu & Telgarsky (ICML 2024) at a budget this machine has: 1, 2 and 3 layers,
# d = 128, 4 heads, learned positions, sequences of 100 over 4 letters, batch 32, as theirs; hop counts 0..4
# instead of 0..16 (each hop count then gets a fifth of the sequences, not a seventeenth), 12,000 steps at lr 1e-3
# with 500 warm-up steps instead of 100,000 at 1e-4. Their published threshold (local/errors.json): 2 layers
# solve k <= 1, 3 layers k <= 3 (headlab.retrieval.khop.PUBLISHED). The runs side by side, one thread each
# (LAYERS="2" runs one; SEEDS="1 2" trains those seeds, one after another per layer count). DEPTH=8 OUT=results/retrieval/khop/k8 trains on hop counts 0..8 instead. Then the
# table (khop.md) and the depth law of the folder (depth_law.md, .png).
set -euo pipefail
OUT=${OUT:-results/retrieval/khop}
for L in ${LAYERS:-1 2 3}; do
  ( for S in ${SEEDS:-0}; do
    start=$(date +%s)
    OMP_NUM_THREADS=1 .venv/bin/headlab retrieval train --task khop --depth ${DEPTH:-4} --n-layers $L --d-model 128 \
      --lr 1e-3 --warmup-steps 500 --batch-size 32 --positions learned --steps "${STEPS:-12000}" \
      --eval-every 1000 --no-progress --seed $S --out "$OUT/L$L-k${DEPTH:-4}-s$S"
    rm -rf "$OUT/L$L-k${DEPTH:-4}-s$S/checkpoints"  # the weights are not committed; the curves are
    echo "L$L-k${DEPTH:-4}-s$S STEPS=${STEPS:-12000}: $(( $(date +%s) - start )) s" >> "$OUT/wall.txt"
  done ) &
done
wait
.venv/bin/python bench/studies/khop_table.py "$OUT" > "$OUT/khop.md"
.venv/bin/headlab retrieval depth-law "$OUT" --overwrite
