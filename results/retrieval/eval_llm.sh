#!/usr/bin/env bash
# Pretrained models on the text forms, 0- and 3-shot, first-token and continuation scoring (one torch thread).
# Writes results/retrieval/eval-llm/<model>-<k>shot/{eval_llm.json,eval_llm.png,log}; a finished one is kept.
# Questions per cell: 80 for smollm2-135m, 50 for gemma3-270m, continuations of 6 tokens (the 2-core
# session's budget set these; the Wilson intervals say what it costs).
set -euo pipefail
OUT=${OUT:-results/retrieval/eval-llm}
export OMP_NUM_THREADS=1
for spec in smollm2-135m:80 gemma3-270m:50; do
  model=${spec%%:*}; n=${spec##*:}
  for shots in 0 3; do
    dir="$OUT/$model-${shots}shot"
    [ -f "$dir/eval_llm.json" ] && continue
    mkdir -p "$dir"
    start=$(date +%s)
    .venv/bin/headlab retrieval eval-llm "$model" --shots "$shots" --n "$n" --depths 1,2,3 --continuation 6 --out "$dir" \
      --no-progress > "$dir/log" 2>&1
    echo "headlab retrieval eval-llm $model --shots $shots --n $n --depths 1,2,3 --continuation 6: $(( $(date +%s) - start )) s" >> "$dir/log"
  done
done
