"""Does the dense run look its references up, or copy the pair before? Per hop count, held-out accuracy at the
dense targets split by how many pairs back the reference's own definition lies (1: the pair just before,
whose resolved value is then the same; chance is 1/2 between the two chains).

    python results/retrieval/dense_pilot/recency.py RUN > results/retrieval/dense_pilot/recency.md

RUN: a dense run folder with its final weights (the pilot's checkpoints are not committed; run.sh trains
L2-D8-dense-b256-s0 again, the run this table was read from).
"""

import sys
from pathlib import Path

import torch

from headlab.retrieval.analysis import load_run
from headlab.retrieval.training import eval_set

N, SEED = 1024, 4 * 10**6  # held-out examples from a seed no training or evaluation set uses

if __name__ == "__main__":
    run = Path(sys.argv[1])
    model, task = load_run(run)
    examples = eval_set(task, N, SEED, task.depth)
    with torch.no_grad():
        preds = [row for i in range(0, N, 256)
                 for row in model(torch.tensor([e["tokens"] for e in examples[i:i + 256]])).logits.argmax(-1)]
    right: dict[tuple[int, str], list[int]] = {}
    for ex, pred in zip(examples, preds):
        defined: dict[int, int] = {}  # variable -> position of its pair's variable token
        for pos, value, hop in ex["dense"]:
            ref = ex["tokens"][pos]
            if hop >= 2:
                back = (pos - 1 - defined[ref]) // 2  # pairs between the reader's pair and the definition
                cell = right.setdefault((hop, "1" if back == 1 else "2 or more"), [0, 0])
                cell[0] += int(pred[pos] == value)
                cell[1] += 1
            defined[ex["tokens"][pos - 1]] = pos - 1
    print(f"Run `{run.name}` ({task.curriculum}, depth {task.depth}), {N} held-out examples.\n")
    print("| hop | definition 1 pair back: accuracy (n) | 2 or more pairs back: accuracy (n) |")
    print("|---|---|---|")
    for hop in range(2, task.depth + 1):
        near, far = right[(hop, "1")], right[(hop, "2 or more")]
        print(f"| {hop} | {near[0] / near[1]:.2f} ({near[1]}) | {far[0] / far[1]:.2f} ({far[1]}) |")
