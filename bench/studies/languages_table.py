"""The table of results/languages/languages.md: per model and language corpus, windows with `/`, SDHs, the top
head by `/` mass and the English top head's mass, from the scans under runs/languages.

    python bench/studies/languages_table.py > results/languages/languages.md
"""

from __future__ import annotations

import json
from pathlib import Path


def main() -> None:
    print("| model | language (corpus) | windows with `/` | SDHs (strict rule) | top head by `/` mass | its mass "
          "| English top head's mass here |")
    print("|---|---|---|---|---|---|---|")
    for model in ("minilm-l6", "smollm2-135m"):
        scans = {lang: json.loads(Path(f"runs/languages/{model}-{lang}/scan.json").read_text())
                 for lang in ("man", "man-de", "man-fr", "man-ja", "man-zh")}
        mass = {lang: {h["name"]: h["scores"]["token"] for h in s["heads"]} for lang, s in scans.items()}
        en_top = max(mass["man"], key=lambda h: mass["man"][h])
        for lang, s in scans.items():
            top = max(mass[lang], key=lambda h: mass[lang][h])
            print(f"| {model} | {lang} | {s['n_samples_with_target']} | {s['n_sdh']} | {top} | {mass[lang][top]:.3f} | "
                  f"{en_top}: {mass[lang][en_top]:.3f} |")


if __name__ == "__main__":
    main()
