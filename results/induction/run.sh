#!/usr/bin/env bash
# The active-induction study of docs/growing.md; run from the repository root. Every arm x 3 seeds on
# configs/induce.toml; the summary goes to results/induction/ (runs/ with the checkpoints stays out of git).
set -euo pipefail
start=$(date +%s)
.venv/bin/headlab induce configs/induce.toml --out runs/induction --seeds 0 1 2 --draws 10 --no-progress \
    --overwrite 2>&1 | tee runs/induction.txt
cp runs/induction/induce.json runs/induction/induce.md runs/induction/induce.png results/induction/
for m in runs/induction/runs/*/measure.json; do
    cp "$m" "results/induction/$(basename "$(dirname "$m")").json"
done
{ echo "command: headlab induce configs/induce.toml --out runs/induction --seeds 0 1 2 --draws 10"
  echo "wall time: $(( $(date +%s) - start )) s"; } | tee -a runs/induction.txt
cp runs/induction.txt results/induction/induce.txt
