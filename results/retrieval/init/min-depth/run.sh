#!/usr/bin/env bash
# Dense depth 8 with training chains of every depth 1..8 (one drawn per step: RetrievalTask.min_depth = 1, the
# CLI's --min-depth 1), fan-in init and an own head, 2 and 3 layers, 2000 steps of 64, d = 128, one distractor
# chain: does a curriculum over the hop range lift hop 2 off the plateau that depth 8 alone sits on
# (results/retrieval/init/dense)? The two ran at once, one thread each, beside nothing else: 149 s and 215 s.
# (Run through the Python API, train_retrieval with checkpoints every 500 steps, before --min-depth reached the
# CLI; the command below is the same run, its checkpoints every 200 steps, which no committed number reads.)
set -euo pipefail
D=results/retrieval/init/min-depth
for L in 2 3; do
  OMP_NUM_THREADS=1 .venv/bin/headlab retrieval train --depth 8 --curriculum dense --min-depth 1 --n-layers $L \
    --d-model 128 --distractors 1 --init fan-in --untied --steps 2000 --eval-every 250 --no-progress \
    --out $D/L$L-D8-dense-s0 &
done
wait
