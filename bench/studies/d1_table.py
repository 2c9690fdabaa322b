"""The D = 1 checks of docs/retrieval.md: each run's last held-out row, from the eval.jsonl beside this file.

    python results/retrieval/d1/table.py > results/retrieval/d1/d1.md
"""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "results/retrieval/d1"
RUNS = {  # run folder -> what it varies (every run: 2 layers, d = 64, 4 heads, RoPE, lr 1e-3, seed 0)
    "none-s0": "D = 1, answer only, 1 distractor, batch 64, 4000 steps",
    "none-dis3-s0": "D = 1, answer only, 3 distractors (4 pairs, the length of D = 2), batch 64, 2000 steps",
    "none-sep-s0": "D = 1, answer only, a `<sep>` after every pair, batch 64, 2000 steps",
    "none-b128-s0": "D = 1, answer only, batch 128 (2x the examples a step), 2000 steps",
    "none-b256-s0": "D = 1, answer only, batch 256 (4x the examples a step), 2000 steps",
    "dense-s0": "D = 1, dense (copy targets at every reference + the answer), batch 64, 2000 steps",
    "chainD2-s0": "D = 2, chain (the lookup as the first of two targets), batch 64, 1000 steps",
}


def main() -> None:
    print("| run | what it varies | step | loss | held-out answer accuracy by queried depth | chance | "
          "first step at 0.99, full depth |")
    print("|---|---|---|---|---|---|---|")
    for name, what in RUNS.items():
        path = HERE / name / "eval.jsonl"
        if not path.exists():
            print(f"| {name} | {what} | not run | | | | |")
            continue
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        task = json.loads((HERE / name / "task.json").read_text())
        last = rows[-1]
        acc = ", ".join(f"D={d}: {a:.2f}" for d, a in last["accuracy"].items())
        full = str(task["depth"])
        first = next((r["step"] for r in rows if r["accuracy"][full] >= 0.99), None)
        print(f"| {name} | {what} | {last['step']} | {last['loss']:.3f} | {acc} | "
              f"{1 / (1 + task['n_distractors']):.2f} | {first or 'never'} |")


if __name__ == "__main__":
    main()
