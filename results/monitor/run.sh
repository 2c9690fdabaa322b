#!/usr/bin/env bash
# The monitor evaluation of docs/monitor.md (every kind whose corpus is installed; `make corpora` installs them);
# run from the repository root. Writes results/monitor/MODEL/{evaluate.json,evaluate.md,calibration.png} and
# MODEL.txt with the output and wall time.
set -euo pipefail
run() {  # model, reference samples
    local start; start=$(date +%s)
    .venv/bin/headlab monitor evaluate "$1" --reference wiki --max-samples "$2" --kind-samples 200 \
        --out "results/monitor/$1" --overwrite --no-progress 2>&1 | tee "results/monitor/$1.txt"
    echo "command: headlab monitor evaluate $1 --reference wiki --max-samples $2 --kind-samples 200" \
        | tee -a "results/monitor/$1.txt"
    echo "wall time: $(( $(date +%s) - start )) s" | tee -a "results/monitor/$1.txt"
}
run minilm-l6 3000
run smollm2-135m 2000
