#!/usr/bin/env bash
# Steps per second of small decoder shapes on one core (optim.threads = 1), 400 steps each with the gradient
# signals and checkpoints a long run pays for, to choose the largest shape that reaches 100,000 steps in about
# two hours. Writes results/formation/long/speed.jsonl (one row per shape; KIND=encoder: the masked-LM encoder
# arm's shape into speed-encoder.jsonl). Run from the repository root.
set -euo pipefail
out=results/formation/long
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KIND=${KIND:-decoder}
file=$out/speed.jsonl
shapes=("3 4 64 64 16" "4 4 64 64 16" "3 4 128 64 16" "3 4 64 128 16" "4 4 128 64 32")
if [ "$KIND" = encoder ]; then file=$out/speed-encoder.jsonl; shapes=("3 4 64 64 16" "4 4 64 64 16"); fi
: > "$file"
for shape in "${shapes[@]}"; do
  read -r L H D T B <<< "$shape"
  cat > "$tmp/c.toml" <<TOML
[model]
kind = "$KIND"
n_layers = $L
n_heads = $H
d_model = $D
max_length = $T
positions = "rope"
[data]
corpus = ["wiki", "pydoc", "linux-doc"]
tokenizer = "bpe:2048"
window = $T
n_windows = 4000
slash_share = 0.1
probe_windows = 32
[optim]
steps = 400
batch_size = $B
warmup_steps = 40
threads = 1
[checkpoints]
early_points = 4
early_fraction = 0.1
every = 200
[track]
grad_every = 50
TOML
  rm -rf "$tmp/run"
  t0=$(date +%s.%N)
  HF_HUB_OFFLINE=1 .venv/bin/headlab train "$tmp/c.toml" --out "$tmp/run" --no-progress > /dev/null
  t1=$(date +%s.%N)
  .venv/bin/python bench/studies/formation_speed_row.py "$tmp/run" "$L" "$H" "$D" "$T" "$B" "$t0" "$t1" >> "$file"
  tail -1 "$file"
done
