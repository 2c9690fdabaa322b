"""The stack of a dense run: which heads, and which layers, carry each hop, by ablation.

A head's attention label (:mod:`.hops`) says what it reads most; it cannot say which hop needs it: in a deep run
every head of the upper layers reads ``ref→def-ref`` most at hop 2. Here every head is zeroed alone, then each
layer's heads together, and per-hop accuracy on the held-out prompts is compared with the unablated model's. A head
(a layer) *carries* hop k when zeroing it removes at least :data:`MIN_DROP` of hop k's answers (ours: one answer in
ten, several times the binomial noise of 256 prompts at the accuracies a solved hop has); at each hop a head's
largest attention lift over its control (if at least the hop labels' ``min_lift``) names the source → target it
reads there (``ref→def-var``, ``ref→def-ref``, ``ref→prev``). So the stack says which layer carries hop k, and what
the heads that carry it attend, for every k.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from headlab.ablation.heads import ablated
from headlab.head import name as head_name
from headlab.nn import Transformer
from headlab.retrieval.training import hop_accuracy

#: the share of a hop's answers whose loss says a zeroed head or layer carries it (ours)
MIN_DROP = 0.1


def _drops(model: Transformer, heads: dict[int, list[int]], exs: list[dict[str, Any]],
           base: dict[str, float]) -> dict[str, float]:
    """Per hop, the accuracy lost with ``heads`` zeroed."""
    with ablated(model, model.cfg.n_layers, model.cfg.n_heads, heads):
        acc = hop_accuracy(model, exs)
    return {k: round(base[k] - acc[k], 4) for k in base}


def reads_at(lift: np.ndarray, keys: tuple[str, ...], min_lift: float) -> list[list[dict[str, str]]]:
    """(L, H) of {hop: ``ref→KEY``} for every hop at which the head's largest lift (L, H, D, keys) is at least
    ``min_lift``."""
    lift = np.nan_to_num(lift, nan=-1.0)
    L, H, D, _ = lift.shape
    return [[{str(d + 1): f"ref→{keys[int(np.argmax(lift[l, h, d]))]}" for d in range(D)
              if lift[l, h, d].max() >= min_lift} for h in range(H)] for l in range(L)]


def hop_stack(model: Transformer, exs: list[dict[str, Any]], lift: np.ndarray, keys: tuple[str, ...],
              min_lift: float) -> dict[str, Any]:
    """Each head zeroed alone and each layer's heads together: the accuracy each hop loses, the heads and layers
    that carry it (a loss of at least :data:`MIN_DROP`), and what each carrying head reads at that hop."""
    L, H = model.cfg.n_layers, model.cfg.n_heads
    base = hop_accuracy(model, exs)
    heads = {head_name(l, h): _drops(model, {l: [h]}, exs, base) for l in range(L) for h in range(H)}
    layers = {str(l): _drops(model, {l: list(range(H))}, exs, base) for l in range(L)}
    reads = reads_at(lift, keys, min_lift)
    carried = {k: [{"head": n, "drop": d[k], "reads": reads[int(n.split(".")[0])][int(n.split(".")[1])].get(k, "-")}
                   for n, d in heads.items() if d[k] >= MIN_DROP] for k in base}
    return {"min_drop": MIN_DROP, "examples": len(exs), "base": base, "heads": heads, "layers": layers,
            "carried_by": carried, "layers_carrying": {k: [l for l, d in layers.items() if d[k] >= MIN_DROP]
                                                       for k in base}}


def carried_hops(stack: dict[str, Any]) -> dict[str, list[str]]:
    """Each head's carried hops, in hop order."""
    out: dict[str, list[str]] = {}
    for k in sorted(stack["carried_by"], key=int):
        for row in stack["carried_by"][k]:
            out.setdefault(row["head"], []).append(k)
    return out


def stacked_labels(labels: list[list[str]], stack: dict[str, Any] | None) -> list[list[str]]:
    """The hop labels with each head's carried hops beside them (``ref→def-ref@2 · hops 2,3``)."""
    if not stack:
        return labels
    hops = carried_hops(stack)
    return [[lab if not hops.get(head_name(l, h)) else
             f"{'' if lab == '-' else lab + ' · '}hops {','.join(hops[head_name(l, h)])}"
             for h, lab in enumerate(row)] for l, row in enumerate(labels)]


def stack_markdown(stack: dict[str, Any]) -> list[str]:
    """The stack as markdown: per hop, its accuracy, the layers and the heads that carry it."""
    lines = ["## The stack: which heads carry each hop", "",
             f"Every head zeroed alone, then each layer's heads together, on {stack['examples']} held-out prompts "
             f"per hop; a head or layer carries hop k when zeroing it removes at least {stack['min_drop']} of hop "
             "k's answers. Beside each carrying head: the accuracy it removes and what it attends at that hop "
             "most above its control (`-`: nothing above the label threshold).", "",
             "| hop | accuracy | layers carrying it (loss) | heads carrying it (loss; reads) |", "|---|---|---|---|"]
    for k in sorted(stack["base"], key=int):
        layers = ", ".join(f"{l} ({stack['layers'][l][k]:.2f})" for l in stack["layers_carrying"][k]) or "none"
        heads = ", ".join(f"{r['head']} ({r['drop']:.2f}; {r['reads']})" for r in stack["carried_by"][k]) or "none"
        lines.append(f"| {k} | {stack['base'][k]:.2f} | {layers} | {heads} |")
    return lines
