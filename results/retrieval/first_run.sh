#!/usr/bin/env bash
# A first run as a new user makes it: headlab retrieval train with default options at depth 2 (two layers, chain
# curriculum, 2500 steps, one distractor chain), into results/retrieval/first_run. Its summary says whether the
# defaults learn the two-hop lookup. Run from the repository's root; the wall time goes to first_run/wall.log.
set -euo pipefail
OUT=${OUT:-results/retrieval/first_run}
start=$(date +%s)
.venv/bin/headlab retrieval train --depth 2 --out "$OUT" --no-progress
echo "first_run.sh: $(( $(date +%s) - start )) s" >> "$OUT/wall.log"
