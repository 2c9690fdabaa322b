#!/usr/bin/env bash
# The long formation study: $CONFIG (default configs/long.toml; the encoder arm: CONFIG=configs/long-encoder.toml
# OUT=runs/formation-long-encoder HERE=results/formation/long/encoder) at seeds $SEEDS (default 0 1 2), two runs at a time (one thread
# each, niced so other work on the machine keeps its cores), then headlab track on every finished run. A run
# that was stopped resumes from its last checkpoint (exactly: the resume tests of test_faults.py), so the runs
# may be spread over several sittings. What is committed (no weights): each run's tracked scores, phases,
# figures, gradient signals and loss log (every 100th step) under results/formation/long/sSEED/, and one row per sitting of a run
# in results/formation/long/runs.jsonl (its command, the steps it reached, its wall time). Run from the root.
set -euo pipefail
OUT=${OUT:-runs/formation-long}
HERE=${HERE:-results/formation/long}
CONFIG=${CONFIG:-configs/long.toml}
LOCK=${LOCK:-runs/formation-long.lock}
mkdir -p "$OUT" "$(dirname "$LOCK")"
one() {  # seed
    local run="$OUT/s$1" t0 t1 resume=""
    t0=$(date +%s)
    if [ ! -f "$run/final.safetensors" ]; then
        [ -d "$run" ] && resume=--resume
        nice -n 10 .venv/bin/headlab train "$CONFIG" --seed "$1" --out "$run" --no-progress $resume \
            > /dev/null || true  # a stopped sitting still records what it reached
    fi
    t1=$(date +%s)
    .venv/bin/python bench/studies/sdh_row.py "$run" "$CONFIG" "$1" "$resume" "$((t1 - t0))" >> "$HERE/runs.jsonl"
    [ -f "$run/final.safetensors" ] || return 0
    [ -f "$run/track/phases.json" ] || nice -n 10 .venv/bin/headlab track "$run" --no-progress > /dev/null
    (  # one sitting at a time writes into results/ (two arms' sittings may end together, and judge from it)
        flock 9
        mkdir -p "$HERE/s$1"
        cp -r "$run/track" "$run/config.toml" "$HERE/s$1/"
        gzip -n -9 -c "$run/signals.jsonl" > "$HERE/s$1/signals.jsonl.gz"
        # the loss log every 100th step (and the first 100): every step is 10 MB a run
        .venv/bin/python bench/studies/sdh_row.py --thin "$run/metrics.jsonl" > "$HERE/s$1/metrics.jsonl"
    ) 9> "$LOCK"
}
export -f one
export OUT HERE CONFIG LOCK
for seed in ${SEEDS:-0 1 2}; do echo "$seed"; done | xargs -P 2 -L 1 bash -c 'set -euo pipefail; one "$0"'
exec 9> "$LOCK"  # from here on, this sitting alone reads and writes results/ (see one)
flock 9
# the claims, judged by their declared rules on whatever runs have finished (fewer than 3: inconclusive)
runs_of() {  # an arm's folder: its tracked seeds, space-separated
    ls -d "$1"/s[0-9]*/track 2>/dev/null | xargs -r -n 1 dirname | tr '\n' ' '
}
long=results/formation/long
done=$(runs_of "$HERE")
if [ -n "$done" ] && [ "$HERE" != $long ]; then
    .venv/bin/python bench/studies/formation_claims.py $done
    .venv/bin/python bench/studies/formation_claims.py --metric sink $done
fi
[ -z "$done" ] || .venv/bin/python bench/studies/formation_order.py "$HERE/order" $done
# whichever arm this was, across the arms: the default arm's claims with the small-qk arm's finished runs as the
# other initialization (none yet: not measured), and which heads form, when and how often, per arm
default=$(runs_of $long) others=$(runs_of $long/small-qk) encoder=$(runs_of $long/encoder)
if [ -n "$default" ]; then
    .venv/bin/python bench/studies/formation_claims.py $default ${others:+--other-init $others}
    .venv/bin/python bench/studies/formation_claims.py --metric sink $default ${others:+--other-init $others}
    arms="default=$(echo $default | tr ' ' ',')"
    [ -z "$others" ] || arms="$arms small-qk=$(echo $others | tr ' ' ',')"
    [ -z "$encoder" ] || arms="$arms encoder=$(echo $encoder | tr ' ' ',')"
    .venv/bin/python bench/studies/formation_inits_table.py $arms > $long/arms.md
fi
# the viewer page of the default arm's first seed (its checkpoint slider, the tracked phases): about 2 MB
if [ "$HERE" = $long ] && [ -f "$OUT/s0/final.safetensors" ] && [ ! -f "$HERE/s0/view.html" ]; then
    .venv/bin/headlab view "$OUT/s0" --out "$HERE/s0/view.html" --no-progress --threads 1 > /dev/null
fi
