#!/usr/bin/env bash
# Initialization and formation, from the induction study's runs (run results/induction/run.sh first): headlab
# track on every run of the plain and init-* arms, then per arm the heads that emerged per kind (the tracker's
# thresholds, docs/formation.md: a score crosses its threshold and stays above it) and their emergence steps.
# Writes results/induction/formation.md; run from the repository root.
set -euo pipefail
start=$(date +%s)
for run in runs/induction/runs/plain-s* runs/induction/runs/init-*-s*; do
    .venv/bin/headlab track "$run" --no-progress --overwrite > /dev/null
done
.venv/bin/python - <<'PY' > results/induction/formation.md
import json, statistics
from pathlib import Path

from headlab.formation.track_report import THRESHOLDS

METRICS = ("previous-token", "induction", "sink", "slash_mass")
arms = ["plain", "init-small-qk", "init-gpt2-scaled", "init-mimetic"]
print("| arm | " + " | ".join(f"{m}: heads ≥ {THRESHOLDS[m]} per seed; median emergence step; top final score "
                            "(median over seeds)" for m in METRICS) + " |")
print("|---|" + "---|" * len(METRICS))
for arm in arms:
    cells = []
    for m in METRICS:
        counts, steps, top = [], [], []
        for run in sorted(Path("runs/induction/runs").glob(f"{arm}-s*")):
            heads = json.loads((run / "track" / "phases.json").read_text())["scores"][m]
            em = [v["emerged_at"] for v in heads.values() if v["emerged_at"] is not None]
            counts.append(len(em))
            steps += em
            top.append(max(v["final"] for v in heads.values()))
        cells.append(f"{', '.join(map(str, counts))}; " + (f"{statistics.median(steps):.0f}" if steps else "-")
                     + f"; {statistics.median(top):.2f}")
    print(f"| {arm} | " + " | ".join(cells) + " |")
PY
echo "wall time: $(( $(date +%s) - start )) s" >> results/induction/formation.md
cat results/induction/formation.md
