#!/usr/bin/env bash
# The scan scaling benchmark of BENCHMARKS.md ("Scaling out the census"); run from the repository root.
set -euo pipefail
start=$(date +%s)
.venv/bin/python bench/scan_scaling.py --model minilm-l6 --samples 512 --rounds 5 | tee results/scan_scaling/minilm-l6.txt
echo "wall time: $(( $(date +%s) - start )) s" | tee -a results/scan_scaling/minilm-l6.txt
