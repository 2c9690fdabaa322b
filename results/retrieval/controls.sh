#!/usr/bin/env bash
# Controls for every committed retrieval circuit (bench/studies/circuit_controls.py): each analyzed run trained
# again from its own record into .replicas/ (git-ignored), its evaluation log compared with the committed one, and
# the committed circuit ablated in the replica against 100 random head sets (analyze/controls.json beside each
# analyze.json); then the table of them all (results/retrieval/controls.md). Cheapest runs first; a run with a
# controls.json is kept, so a stopped sitting carries on from where it stopped. MAX_COST (steps x layers x
# d_model^2) leaves the 20,000-step depth-edge runs to a sitting with the time for them; SKIP leaves out the runs
# of depth_law.sh (2026-12-02), whose ensembles this code does not reproduce (the replica's loss differs from the
# first evaluation on): a replica of them needs the code that trained them.
# As run (2026-12-07, 2 CPU cores, two ensembles at a time): wall times in controls_wall.log.
set -euo pipefail
start=$(date +%s)
SKIP=${SKIP-"depth_law*/* dense_pilot/*"}
set -f  # the skip patterns are the script's globs, not the shell's
OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python bench/studies/circuit_controls.py --jobs "${JOBS:-2}" \
    --max-cost "${MAX_COST:-2e8}" --skip $SKIP
.venv/bin/python bench/studies/circuit_controls.py --table results/retrieval/controls.md
echo "controls.sh JOBS=${JOBS:-2} MAX_COST=${MAX_COST:-2e8} SKIP='$SKIP': $(( $(date +%s) - start )) s" \
    >> results/retrieval/controls_wall.log
