"""Markdown table of the diagnosis variants (results/retrieval/diagnose/*/sweep.json), one row per variant
and depth/curriculum cell: final held-out accuracy at full depth per seed, step of success, ensemble wall time.

    .venv/bin/python results/retrieval/diagnose_table.py  # the table of diagnose.md
"""

import json
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "results/retrieval/diagnose")
print("| variant | cell | pairs in prompt | chains (chance) | final full-depth accuracy per seed "
      "| success step per seed | wall s |")
print("|---|---|---|---|---|---|---|")
for f in sorted(root.glob("*/sweep.json")):
    r = json.loads(f.read_text())
    g = r["grid"]
    cells: dict[str, list] = {}
    for run in r["runs"]:
        cells.setdefault(f"L{run['n_layers']}-D{run['task']['depth']}-{run['task']['curriculum']}", []).append(run)
    for cell, runs in cells.items():
        t = runs[0]["task"]
        acc = ", ".join(f"{x['final_accuracy'][str(t['depth'])]:.2f}" for x in runs)
        steps = ", ".join(str(x["success_step"] or "-") for x in runs)
        wall = runs[0].get("ensemble_wall_s", "")
        k = 1 + t["n_distractors"]
        print(f"| {f.parent.name} | {cell} | {t['depth'] * k} | {k} ({1 / k:.2f}) | {acc} | {steps} | {wall} |")
