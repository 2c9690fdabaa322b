"""The pilot's dense runs side by side by batch size: per-hop held-out accuracy at the last step, and D_max.

    python results/retrieval/dense_pilot/batches.py > results/retrieval/dense_pilot/batches.md
"""

import json
from pathlib import Path

from headlab.retrieval.law import d_max

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "results/retrieval/dense_pilot"

if __name__ == "__main__":
    runs = [(json.loads(p.read_text()), p.parent.name) for p in sorted(HERE.glob("*/summary.json"))]
    runs.sort(key=lambda r: r[0]["batch_size"])
    hops = list(runs[0][0]["final_hops"])
    print("| run | batch | steps | examples seen | " + " | ".join(f"hop {h}" for h in hops) + " | D_max |")
    print("|---|---|---|---|" + "---|" * (len(hops) + 1))
    for s, name in runs:
        cells = " | ".join(f"{s['final_hops'][h]:.2f}" for h in hops)
        print(f"| {name} | {s['batch_size']} | {s['steps']} | {s['batch_size'] * s['steps']:,} | {cells} | "
              f"{d_max(s['final_hops'])} |")
