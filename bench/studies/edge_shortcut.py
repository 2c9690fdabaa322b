"""Does a model that solves hop k under dense targets look the value up, or read it from the layout?
On held-out chains of the run given (default: the depth-edge study's one-layer seed 1), at every hop-k reference
(default k = 2): (1) accuracy; (2) at hop 2, the value in the referenced definition swapped for another value:
does the prediction follow it (from hop 3 on the referenced definition holds a reference, not a value: not asked);
(3) the referenced definition's variable renamed, so no definition of the referenced variable is left: is the
prediction still its old value (a lookup could not find it; a read by position would). Writes RUN/shortcut.md
(hop 2) or RUN/shortcut-hop{k}.md.

    python bench/studies/edge_shortcut.py [RUN [HOP]]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from headlab.io import write_text_atomic
from headlab.retrieval.training import eval_set, load_run

RUN = Path(sys.argv[1] if len(sys.argv) > 1 else "results/retrieval/depth_edge/L1-D2/L1-D2-dense-s1")
HOP = int(sys.argv[2]) if len(sys.argv) > 2 else 2
SEED, N = 77, 256


def main() -> None:
    model, task = load_run(RUN)
    model.eval()
    exs = eval_set(task, N, SEED, task.depth)
    values = sorted({v for ex in exs for _, v, _ in ex["dense"]})
    variables = sorted({t for ex in exs for i, t in enumerate(ex["tokens"]) if i % 2 == 1})
    correct = follows = kept = total = 0
    with torch.no_grad():
        predict = lambda toks, at: model(torch.tensor([toks])).logits[0, at].argmax().item()  # noqa: E731
        for ex in exs:
            t = list(ex["tokens"])
            for pos, val, hop in ex["dense"]:
                if hop != HOP:
                    continue
                i = next(j for j in range(1, pos) if t[j] == t[pos] and j % 2 == 1)  # the referenced definition
                correct += predict(t, pos) == val
                if HOP == 2:
                    swapped = next(v for v in values if v not in t)
                    follows += predict(t[:i + 1] + [swapped] + t[i + 2:], pos) == swapped
                renamed = next(v for v in variables if v not in t)
                kept += predict(t[:i] + [renamed] + t[i + 1:], pos) == val
                total += 1
    text = (f"# Hop {HOP} in {model.cfg.n_layers} layer{'s' if model.cfg.n_layers > 1 else ''}: lookup or layout? "
            f"(`{RUN}`)\n\n{total} hop-{HOP} references of {N} held-out chains (seed {SEED}), "
            f"`bench/studies/edge_shortcut.py {RUN} {HOP}`:\n\n"
            f"| test | of {total} |\n|---|---|\n"
            f"| predicted the value | {correct} |\n"
            + (f"| value in the referenced definition swapped: the prediction follows it | {follows} |\n" if HOP == 2
               else "")
            +
            f"| the referenced definition's variable renamed (no definition left to find): still the old value | "
            f"{kept} |\n")
    write_text_atomic(RUN / ("shortcut.md" if HOP == 2 else f"shortcut-hop{HOP}.md"), text)
    print(text)


if __name__ == "__main__":
    main()
