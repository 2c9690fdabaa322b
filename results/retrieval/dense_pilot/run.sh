#!/usr/bin/env bash
# A pilot of the depth law: the dense curriculum at depth 8, 2 layers, 2500 steps of 64, d = 128, 4 heads, RoPE,
# lr 1e-3, one distractor chain, seed 0 (run 2026-12-01 on the 2 cores shared with the smollm2-135m monitor
# evaluation, ~15 min; the 3-layer cell of the same command was stopped at step 500 to free the cores). Kept:
# eval.jsonl, summary.json, task.json, config.toml and the circuit analysis (checkpoints left out).
set -euo pipefail
OUT=results/retrieval/dense_pilot
.venv/bin/headlab retrieval sweep --layers 2 --depths 8 --curricula dense --seeds 0 --steps 2500 --batch-size 64 \
  --d-model 128 --distractors 1 --eval-every 250 --eval-n 96 --checkpoint-every 250 --jobs 1 --no-progress --out $OUT
.venv/bin/headlab retrieval analyze $OUT/L2-D8-dense-s0 --out $OUT/L2-D8-dense-s0/analyze --overwrite
.venv/bin/headlab retrieval depth-law $OUT --overwrite
# The batch lever (run 2026-12-01 after the CI, the two side by side on the 2 cores, one thread each):
for b in 128 256; do
  .venv/bin/headlab retrieval train --depth 8 --curriculum dense --n-layers 2 --d-model 128 --distractors 1 \
    --steps 2500 --batch-size $b --eval-every 250 --no-progress --out $OUT/L2-D8-dense-b$b-s0
done
.venv/bin/python bench/studies/dense_pilot_batches.py > $OUT/batches.md
