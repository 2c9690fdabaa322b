#!/usr/bin/env bash
# The D = 1 checks of docs/retrieval.md, one run each (2 layers, d = 64, 4 heads, RoPE, lr 1e-3, seed 0), run from
# the repository root on the 2 shared cores beside the monitor evaluations (2026-12-01); each run folder keeps
# its eval.jsonl, task.json, summary.json and config.toml (checkpoints left out; the runs were made in a scratch
# folder with these options and copied here). Then bench/studies/d1_table.py renders d1.md.
set -euo pipefail
R=results/retrieval/d1
t() { .venv/bin/headlab retrieval train --n-layers 2 --distractors 1 --eval-every 250 --no-progress "$@"; }
t --depth 1 --curriculum none --steps 4000 --out $R/none-s0
t --depth 1 --curriculum none --steps 2000 --distractors 3 --out $R/none-dis3-s0
t --depth 1 --curriculum none --steps 2000 --separator --out $R/none-sep-s0
t --depth 1 --curriculum none --steps 2000 --batch-size 128 --out $R/none-b128-s0
t --depth 1 --curriculum none --steps 2000 --batch-size 256 --out $R/none-b256-s0
t --depth 1 --curriculum dense --steps 2000 --out $R/dense-s0
t --depth 2 --curriculum chain --steps 1000 --out $R/chainD2-s0
.venv/bin/python bench/studies/d1_table.py > $R/d1.md
