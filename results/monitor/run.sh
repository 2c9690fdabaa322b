#!/usr/bin/env bash
# The monitor evaluation of docs/monitor.md; run from the repository root.
set -euo pipefail
start=$(date +%s)
.venv/bin/headlab monitor evaluate minilm-l6 --reference wiki --max-samples 600 --kind-samples 200 \
    --out results/monitor/minilm-l6 --overwrite --no-progress | tee results/monitor/minilm-l6.txt
echo "wall time: $(( $(date +%s) - start )) s" | tee -a results/monitor/minilm-l6.txt
