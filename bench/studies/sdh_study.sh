#!/usr/bin/env bash
# The slash-dense formation study (results/formation/sdh/README.md): arm $ARM (all or dense: configs/sdh-$ARM.toml)
# at seeds $SEEDS (default 0 1 2), two runs at a time (one thread each, niced so other work keeps its cores).
# A stopped run resumes from its last checkpoint in runs/formation-sdh-$ARM/sSEED. A finished run is tracked
# (headlab track: every head at every checkpoint) and measured (the strict slash-dominance rule at every checkpoint
# on the run's held-out probe windows: sdh_measure.py), and its records, without weights, are copied to
# results/formation/sdh/$ARM/sSEED/. One row per sitting of a run goes to results/formation/sdh/$ARM/runs.jsonl.
# When a sitting ends before a run does, PACK=1 carries each unfinished run to results/formation/sdh/$ARM/carry/sSEED
# (its checkpoints' scores and what a resume needs: sdh_carry.py), to commit; the next sitting, even in a new
# checkout without runs/, makes the run again from there, resumes it, and joins the scores when it finishes.
# Run from the repository's root.
set -euo pipefail
ARM=${ARM:?ARM=all or ARM=dense}
CONFIG=${CONFIG:-configs/sdh-$ARM.toml}
OUT=${OUT:-runs/formation-sdh-$ARM}
HERE=${HERE:-results/formation/sdh/$ARM}
CARRY=$HERE/carry
LOCK=${LOCK:-runs/formation-sdh.lock}
mkdir -p "$OUT" "$HERE"
one() {  # seed
    local run="$OUT/s$1" t0 resume=""
    t0=$(date +%s)
    if [ -n "${PACK:-}" ]; then  # the sitting is ending: carry an unfinished run, train nothing
        [ -f "$run/final.safetensors" ] || [ ! -d "$run/checkpoints" ] || \
            .venv/bin/python bench/studies/sdh_carry.py pack "$run" "$CARRY/s$1"
        return 0
    fi
    if [ ! -d "$run/checkpoints" ] && [ -d "$CARRY/s$1" ]; then
        .venv/bin/python bench/studies/sdh_carry.py unpack "$CARRY/s$1" "$run"
    fi
    if [ ! -f "$run/final.safetensors" ]; then
        [ -d "$run" ] && resume=--resume
        nice -n 10 .venv/bin/headlab train "$CONFIG" --seed "$1" --out "$run" --no-progress $resume \
            > /dev/null || true  # a stopped sitting still records what it reached
    fi
    .venv/bin/python bench/studies/sdh_row.py "$run" "$CONFIG" "$1" "$resume" "$(( $(date +%s) - t0 ))" \
        >> "$HERE/runs.jsonl"
    [ -f "$run/final.safetensors" ] || return 0
    if [ -d "$CARRY/s$1" ] && [ ! -f "$run/measure.json" ]; then  # scored in two sittings: join them
        nice -n 10 .venv/bin/python bench/studies/sdh_carry.py finish "$run" "$CARRY/s$1"
    fi
    [ -f "$run/track/phases.json" ] || nice -n 10 .venv/bin/headlab track "$run" --no-progress > /dev/null
    [ -f "$run/measure.json" ] || nice -n 10 .venv/bin/python bench/studies/sdh_measure.py "$run" "$ARM"
    if [ ! -f "$run/track/phases.json" ] || [ ! -f "$run/measure.json" ]; then  # keep the carry: nothing is joined
        echo "sdh_study: $run trained but its track or measure did not finish; run the study again to finish it" >&2
        return 1
    fi
    (  # one sitting at a time writes into results/
        flock 9
        mkdir -p "$HERE/s$1"
        cp -r "$run/track" "$run/config.toml" "$run/measure.json" "$HERE/s$1/"
        gzip -n -9 -c "$run/signals.jsonl" > "$HERE/s$1/signals.jsonl.gz"  # packed: read_signals reads either
        .venv/bin/python bench/studies/sdh_row.py --thin "$run/metrics.jsonl" > "$HERE/s$1/metrics.jsonl"
        rm -rf "$CARRY/s$1"  # joined: what it carried is in sSEED/ now
    ) 9> "$LOCK"
}
export -f one
export OUT HERE CONFIG LOCK ARM CARRY PACK
for seed in ${SEEDS:-0 1 2}; do echo "$seed"; done | xargs -P 2 -L 1 bash -c 'set -euo pipefail; one "$0"'
