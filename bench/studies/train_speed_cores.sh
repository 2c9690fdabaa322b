#!/usr/bin/env bash
# Training throughput of the long study's shape (configs/long.toml: 3 layers x 4 heads, d = 64, windows of 64,
# batch 16, gradient signals every 50 steps) on this machine's two cores, 400 steps each: one run on one thread,
# one run on two threads, and two runs side by side on one thread each (how run.sh trains two seeds). Writes
# $OUT (default results/formation/long/speed-cores.jsonl; another machine's measurement goes to another file), one
# row per run, its "setting" first, and beside it OUT's name with .cpu: the machine's CPU model and vector flags.
# Run from the repository root with nothing else running. A first run, not recorded, reads the corpus into the page
# cache.
set -euo pipefail
out=${OUT:-results/formation/long/speed-cores.jsonl}
[ ! -e "$out" ] || [ -n "${OVERWRITE:-}" ] || { echo "$out exists: set OUT to another file, or OVERWRITE=1" >&2; exit 2; }
{ lscpu | sed -n 's/^Model name: *//p'; grep -o 'avx[0-9a-z_]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo; } \
    > "${out%.jsonl}.cpu"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
config() {  # threads -> a copy of the long config, 400 steps, checkpoints as its first 400 steps have them
  sed -e 's/^steps = 100000/steps = 400/' -e "s/^threads = 1/threads = $1/" -e 's/^every = 5000/every = 200/' \
      configs/long.toml > "$tmp/t$1.toml"
}
timed() {  # setting threads run
  local t0 t1
  t0=$(date +%s.%N)
  HF_HUB_OFFLINE=1 .venv/bin/headlab train "$tmp/t$2.toml" --out "$tmp/$3" --no-progress > /dev/null
  t1=$(date +%s.%N)
  printf '{"setting": "%s", ' "$1" >> "$tmp/$3.row"
  .venv/bin/python bench/studies/formation_speed_row.py "$tmp/$3" 3 4 64 64 16 "$t0" "$t1" | cut -c2- >> "$tmp/$3.row"
}
config 1
config 2
timed "warm-up (the corpus read from disk once, not recorded)" 1 w
: > "$out"
timed "one run, 1 thread" 1 a && cat "$tmp/a.row" >> "$out"
timed "one run, 2 threads" 2 b && cat "$tmp/b.row" >> "$out"
timed "two runs at once, 1 thread each (run 1)" 1 c &
timed "two runs at once, 1 thread each (run 2)" 1 d &
wait
cat "$tmp/c.row" "$tmp/d.row" >> "$out"
cat "$out"
