#!/usr/bin/env bash
# `/` heads across languages on real text: man pages in English and Debian's German, French, Japanese and
# Chinese translations (make corpora installs them), 300 windows that contain '/' per model and language, token
# detector only; then per model and language the SDH count (strict rule), the top head by `/` mass and its mass,
# and whether the English top head stays on top. Writes results/languages/languages.md; run from the repo root.
set -euo pipefail
start=$(date +%s)
for model in minilm-l6 smollm2-135m; do
    for lang in man man-de man-fr man-ja man-zh; do
        .venv/bin/headlab scan "$model" --corpus "$lang" --filter with-target --max-samples 300 --detectors token \
            --no-progress --overwrite --out "runs/languages/$model-$lang" > /dev/null
    done
done
.venv/bin/python bench/studies/languages_table.py > results/languages/languages.md
echo "wall time: $(( $(date +%s) - start )) s" >> results/languages/languages.md
cat results/languages/languages.md
