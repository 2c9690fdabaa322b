"""Per-hop held-out accuracy of the pilot's dense run over training, from its eval.jsonl.

    python results/retrieval/dense_pilot/hops.py > results/retrieval/dense_pilot/hops.md
"""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "results/retrieval/dense_pilot"

if __name__ == "__main__":
    rows = [json.loads(x) for x in (HERE / "L2-D8-dense-s0" / "eval.jsonl").read_text().splitlines()]
    hops = list(rows[0]["hops"])
    print("| step | " + " | ".join(f"hop {h}" for h in hops) + " | answer at D = 8 |")
    print("|---|" + "---|" * (len(hops) + 1))
    for r in rows:
        print(f"| {r['step']} | " + " | ".join(f"{r['hops'][h]:.2f}" for h in hops) + f" | {r['accuracy']['8']:.2f} |")
