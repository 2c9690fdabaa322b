#!/usr/bin/env bash
# Initialization and formation, from the induction study's runs (run results/induction/run.sh first): headlab
# track on every run of the plain and init-* arms, then per arm the heads that emerged per kind (the tracker's
# thresholds, docs/formation.md: a score crosses its threshold and stays above it) and their emergence steps.
# Writes results/induction/formation.md; run from the repository root.
set -euo pipefail
start=$(date +%s)
for run in runs/induction/runs/plain-s* runs/induction/runs/init-*-s*; do
    .venv/bin/headlab track "$run" --no-progress --overwrite > /dev/null
done
.venv/bin/python bench/studies/induction_formation_table.py > results/induction/formation.md
echo "wall time: $(( $(date +%s) - start )) s" >> results/induction/formation.md
cat results/induction/formation.md
