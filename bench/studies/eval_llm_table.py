"""One markdown table of every results/retrieval/eval-llm/*/eval_llm.json: per model, shots, form and depth the
first-token accuracy and the continuation accuracy (Wilson 95%), and the continuation outcome shares.

    .venv/bin/python results/retrieval/eval_llm_table.py > results/retrieval/eval_llm.md
"""

import json
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "results/retrieval/eval-llm")
print("| model | shots | form | D | n | chance | first token [95%] | continuation [95%] | distractor | hop "
      "| other name | format |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(root.glob("*/eval_llm.json")):
    r = json.loads(f.read_text())
    for c in r["cells"]:
        k = c["continuation"]
        share = [f"{k['counts'][o] / c['n']:.2f}" for o in ("distractor", "hop", "other-name", "format")]
        print(f"| {r['model']} | {r['shots']} | {c['form']} | {c['depth']} | {c['n']} | {c['chance']:.2f} | "
              f"{c['accuracy']:.2f} [{c['interval'][0]:.2f}, {c['interval'][1]:.2f}] | "
              f"{k['accuracy']:.2f} [{k['interval'][0]:.2f}, {k['interval'][1]:.2f}] | " + " | ".join(share) + " |")
