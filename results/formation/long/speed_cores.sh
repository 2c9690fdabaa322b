#!/usr/bin/env bash
# Training throughput of the long study's shape (configs/long.toml: 3 layers x 4 heads, d = 64, windows of 64,
# batch 16, gradient signals every 50 steps) on this machine's two cores, 400 steps each: one run on one thread,
# one run on two threads, and two runs side by side on one thread each (how run.sh trains two seeds). Writes
# results/formation/long/speed-cores.jsonl, one row per run, its "setting" first. Run from the repository root
# with nothing else running. A first run, not recorded, reads the corpus into the page cache.
set -euo pipefail
out=results/formation/long/speed-cores.jsonl
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
