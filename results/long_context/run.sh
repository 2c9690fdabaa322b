#!/usr/bin/env bash
# The long-context benchmark as recorded in BENCHMARKS.md (2 CPU cores, no GPU).
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
.venv/bin/python bench/long_context.py --model smollm2-135m --lengths 128 512 2048 8192 \
  --json results/long_context/smollm2-135m.json | tee results/long_context/smollm2-135m.txt
.venv/bin/python bench/long_context.py --model minilm-l6 --lengths 128 512 \
  --json results/long_context/minilm-l6.json | tee results/long_context/minilm-l6.txt
.venv/bin/python bench/long_context.py --model minilm-l6 --lengths 128 --batch 8 --configs adeg \
  --json results/long_context/minilm-l6-batch8.json | tee results/long_context/minilm-l6-batch8.txt
echo "wall seconds: $(( $(date +%s) - start ))" | tee results/long_context/wall.txt
