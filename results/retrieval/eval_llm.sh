#!/usr/bin/env bash
# Pretrained models on the text forms, 0- and 3-shot, first-token and continuation scoring (one torch thread
# each). Writes results/retrieval/eval-llm/<model>-<k>shot/{eval_llm.json,eval_llm.png,log}; a finished one is
# kept. Questions per cell (set by the 2-core session's budget; the Wilson intervals say what it costs):
# 0-shot 80 for smollm2-135m, 50 for gemma3-270m; 3-shot 20 for both (a 3-shot prompt is ~4x longer and is read
# twice, once per scoring: ~5 CPU-seconds a question here). Runs go side by side, as they were run.
set -euo pipefail
OUT=${OUT:-results/retrieval/eval-llm}
export OMP_NUM_THREADS=1
one() {
  local model=$1 shots=$2 n=$3
  local dir="$OUT/$model-${shots}shot"
  [ -f "$dir/eval_llm.json" ] && return 0
  mkdir -p "$dir"
  local start; start=$(date +%s)
  .venv/bin/headlab retrieval eval-llm "$model" --shots "$shots" --n "$n" --depths 1,2,3 --continuation 6 \
    --out "$dir" --no-progress > "$dir/log" 2>&1
  echo "headlab retrieval eval-llm $model --shots $shots --n $n --depths 1,2,3 --continuation 6: $(( $(date +%s) - start )) s" >> "$dir/log"
}
one smollm2-135m 0 80 & one gemma3-270m 0 50 & wait
one smollm2-135m 3 20 & one gemma3-270m 3 20 & wait
