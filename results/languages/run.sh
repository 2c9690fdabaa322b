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
.venv/bin/python - <<'PY' > results/languages/languages.md
import json
from pathlib import Path

print("| model | language (corpus) | windows with `/` | SDHs (strict rule) | top head by `/` mass | its mass | English top head's mass here |")
print("|---|---|---|---|---|---|---|")
for model in ("minilm-l6", "smollm2-135m"):
    scans = {lang: json.loads(Path(f"runs/languages/{model}-{lang}/scan.json").read_text())
             for lang in ("man", "man-de", "man-fr", "man-ja", "man-zh")}
    mass = {lang: {h["name"]: h["scores"]["token"] for h in s["heads"]} for lang, s in scans.items()}
    en_top = max(mass["man"], key=mass["man"].get)
    for lang, s in scans.items():
        top = max(mass[lang], key=mass[lang].get)
        print(f"| {model} | {lang} | {s['n_samples_with_target']} | {s['n_sdh']} | {top} | {mass[lang][top]:.3f} | "
              f"{en_top}: {mass[lang][en_top]:.3f} |")
PY
echo "wall time: $(( $(date +%s) - start )) s" >> results/languages/languages.md
cat results/languages/languages.md
