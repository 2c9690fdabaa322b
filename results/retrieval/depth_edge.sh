#!/usr/bin/env bash
# The depth law where it can fail (rule retrieval.depth-edge, declared before these runs): one layer trained to
# depth 2 and two layers to depths 4, 5 and 6, dense curriculum, seeds 0, 1, 2, each cell one ensemble in its own
# sweep folder (results/retrieval/depth_edge/L{L}-D{D}). The recipe is depth_law.sh's (fan-in, untied, d = 128,
# 4 heads, one distractor chain, batch 64, lr 1e-3) for $STEPS steps (default 20000: at 6000 two 2-layer seeds were
# still falling, results/retrieval/depth_law_long), so the loss flattens under the rule's plateau test.
#
# Two cells train at once, one thread each, niced. A stopped cell resumes from the newest step its three members
# all checkpointed (headlab retrieval sweep resumes it). Across sittings in new checkouts, PACK=1 force-adds each
# unfinished run's newest checkpoint to git (checkpoints are otherwise ignored) and drops the older ones it had
# added, so the next sitting's checkout holds what a resume needs; commit after it. Each sitting's wall time per
# cell goes to depth_edge/wall.log. When every cell has finished, the depth law per cell and the verdicts follow.
# Run from the repository's root.
set -euo pipefail
HERE=${HERE:-results/retrieval/depth_edge}
STEPS=${STEPS:-20000}
CELLS=${CELLS:-"1:2 2:4 2:5 2:6"}
mkdir -p "$HERE"
export HERE STEPS
cell() {  # L:D
    local L=${1%:*} D=${1#*:} out t0
    out="$HERE/L$L-D$D"
    t0=$(date +%s)
    if [ -n "${PACK:-}" ]; then  # the sitting is ending: carry each unfinished run's newest checkpoint in git
        for run in "$out"/L*-dense-s*; do
            [ -d "$run/checkpoints" ] && [ ! -f "$run/summary.json" ] || continue
            newest=$(ls -d "$run"/checkpoints/step-* | sort | tail -1)
            git rm -r -q --cached --ignore-unmatch "$run/checkpoints" > /dev/null
            git add -f "$newest"
            echo "depth_edge: carried $newest"
        done
        return 0
    fi
    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/headlab retrieval sweep --layers "$L" --depths "$D" --curricula dense \
        --seeds 0,1,2 --init fan-in --untied --steps "$STEPS" --batch-size 64 --d-model 128 --distractors 1 \
        --eval-every 250 --eval-n 96 --checkpoint-every "${EVERY:-500}" --jobs 1 --no-progress --out "$out" \
        || echo "depth_edge: L$L-D$D stopped; run again to resume it" >&2
    echo "depth_edge.sh L$L-D$D (steps $STEPS): $(( $(date +%s) - t0 )) s this sitting" >> "$HERE/wall.log"
}
export -f cell
JOBS=2
[ -z "${PACK:-}" ] || JOBS=1  # packing stages files in git, whose index takes one writer at a time
for c in $CELLS; do echo "$c"; done | xargs -P "$JOBS" -L 1 bash -c 'set -euo pipefail; cell "$0"'
[ -z "${PACK:-}" ] || exit 0
done=$(ls "$HERE"/L*-D*/L*-dense-s*/summary.json 2>/dev/null | wc -l)
if [ "$done" -lt 12 ]; then
    echo "depth_edge: $done of 12 runs finished; run again to go on" >&2
    exit 0
fi
for c in $CELLS; do .venv/bin/headlab retrieval depth-law "$HERE/L${c%:*}-D${c#*:}" --overwrite; done
# every cell together: D_max per layer count against 3^L/2 (docs/retrieval.md's figure)
.venv/bin/headlab retrieval depth-law "$HERE"/L1-D2 "$HERE"/L2-D4 "$HERE"/L2-D5 "$HERE"/L2-D6 --out "$HERE/law" \
    --overwrite
# when the last run has just finished, before its checkpoints are analyzed: the git-added carries go
git rm -r -q --cached --ignore-unmatch "$HERE"/L*-D*/L*-dense-s*/checkpoints > /dev/null
.venv/bin/headlab verdicts results
