#!/usr/bin/env bash
# `/` heads across languages on the slash stimulus suite: the same seven categories (URLs, paths, dates,
# alternatives, fractions, units, code) with short structural templates in English, Chinese, German, French and
# Japanese (ours; src/headlab/probes/templates.py), 40 items per language, on the four packaged models. Writes
# results/languages/stimuli.md (and runs/languages-stimuli/MODEL/languages.json); run from the repository root.
set -euo pipefail
start=$(date +%s)
.venv/bin/headlab languages minilm-l6 mpnet-base smollm2-135m gemma3-270m --n 40 \
    --out runs/languages-stimuli --overwrite > /dev/null
cp runs/languages-stimuli/languages.md results/languages/stimuli.md
echo "" >> results/languages/stimuli.md
echo "Command: bash results/languages/stimuli.sh; wall time: $(( $(date +%s) - start )) s" >> results/languages/stimuli.md
cat results/languages/stimuli.md
