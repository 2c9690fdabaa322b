#!/usr/bin/env bash
# Initialization and formation where induction heads form: configs/induction-heads.toml (3 layers x 4 heads,
# d = 64, RoPE, the stdlib's Python source, every window ending with a copy of an earlier span of its own) under
# each initialization (default, small-qk, gpt2-scaled, mimetic) x seeds 0-2, two runs at a time (one thread
# each), then headlab track on every run and the emergence table (results/formation/formation.md). Finished runs
# are kept; an interrupted one resumes. Run from the repository root.
set -euo pipefail
start=$(date +%s)
OUT=runs/formation-inits
mkdir -p "$OUT/configs"
for init in default small-qk gpt2-scaled mimetic; do
    sed "s/^init = .*/init = \"$init\"/" configs/induction-heads.toml > "$OUT/configs/$init.toml"
done
one() {  # init seed
    local run="$OUT/$1-s$2"
    if [ ! -f "$run/final.safetensors" ]; then
        .venv/bin/headlab train "$OUT/configs/$1.toml" --seed "$2" --out "$run" --no-progress \
            $([ -d "$run" ] && echo --resume) > /dev/null
    fi
    [ -f "$run/track/phases.json" ] || .venv/bin/headlab track "$run" --no-progress > /dev/null
}
export -f one
export OUT
for seed in 0 1 2; do for init in default small-qk gpt2-scaled mimetic; do echo "$init $seed"; done; done \
    | xargs -P 2 -L 1 bash -c 'set -euo pipefail; one "$0" "$1"'
.venv/bin/python bench/studies/formation_inits_table.py > results/formation/formation.md
echo "Command: bash results/formation/run.sh; wall time: $(( $(date +%s) - start )) s" >> results/formation/formation.md
cat results/formation/formation.md
