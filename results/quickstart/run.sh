#!/usr/bin/env bash
# The README's one-minute command (run from the repository root): a census of minilm-l6 on 64 windows of the
# default corpus that hold '/'. Writes results/quickstart/scan.txt (what the command printed, the command and the
# wall time) and the scan's folder results/quickstart/scan/ (scan.json, heads.csv).
set -euo pipefail
start=$(date +%s)
.venv/bin/headlab scan minilm-l6 --max-samples 64 --filter with-target --out results/quickstart/scan --overwrite \
    --no-progress 2>/dev/null | tee results/quickstart/scan.txt
echo "command: headlab scan minilm-l6 --max-samples 64 --filter with-target --out DIR" | tee -a results/quickstart/scan.txt
echo "wall time: $(( $(date +%s) - start )) s (model load included)" | tee -a results/quickstart/scan.txt
