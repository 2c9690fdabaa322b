"""Which head carries which hop, in a run trained on dense targets (``headlab retrieval analyze`` on a dense run).

At the reference of a hop-k pair (x_k = x_{k-1}, k >= 2) the model emits x_k's value, so it must find x_{k-1}'s
definition earlier in the prompt: its variable (``def-var``) or the reference right after it (``def-ref``, where
x_{k-1}'s own value is emitted, so what the layers there hold about it can be read). ``prev`` is the pair's own
variable, the previous token (the key side of an induction step). A head's mass on each key is read per hop and
compared with a control (its *lift*): for the definition keys, the same keys of the distractor chains' variable at
that hop, for ``prev`` what attention spread evenly over the visible keys would put there. A head is labelled
``ref→KEY@K`` for the (key, hop) of its largest lift when that lift is at least ``min_lift`` (ours), else
``-``. So a label names a lookup of *this* chain's referent, not a head that reads every value or definition
alike, nor a mass any short prompt gives.

The check: the heads of each label zero-ablated together, per-hop accuracy against as many random other heads
of the same layers (``draws`` draws); the emergence: over the checkpoints, the first step from which each
labelled head's lift stays at or above ``min_lift``, beside the first evaluation at which each hop count is
solved (accuracy >= 0.95), so the order the heads appear in can be read against the order the hops are learned.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

import numpy as np

from headlab.ablation.heads import ablated
from headlab.attention.routes import AUTO
from headlab.formation.phases import emergence_step
from headlab.head import name as head_name
from headlab.io import read_jsonl
from headlab.nn import Transformer
from headlab.retrieval.controls import WHOLE, control_sets
from headlab.retrieval.probes import link_sample, pooled_mass
from headlab.retrieval.stack import hop_stack, stack_markdown, stacked_labels
from headlab.retrieval.training import RetrievalTask, checkpoint_models, hop_accuracy

KEYS = ("def-var", "def-ref", "prev")
SOLVED = 0.95


def _definitions(task: RetrievalTask, tokens: Sequence[int]) -> dict[int, int]:
    """Each variable's position as a pair's first token."""
    stride = 3 if task.separator else 2
    return {tokens[1 + stride * j]: 1 + stride * j for j in range((len(tokens) - 3) // stride)}


def hop_profile(model: Transformer, task: RetrievalTask, examples: list[dict[str, Any]], route: str = AUTO
                ) -> tuple[np.ndarray, np.ndarray]:
    """Mean attention mass (L, H, D, keys) from each hop's references to each key, and its control: for the
    definition keys, the mass on the same keys of the other chains' variable at that hop (defined earlier too),
    so a head that reads every value or every definition alike gains nothing; for ``prev``, what even attention
    over the visible keys gives. Hop k is index k - 1 (hop 1 copies its value: no definition to find); a
    reference with no earlier distractor definition is left out of the definition keys."""
    D = task.depth
    mine = [f"{k}@{d}" for d in range(1, D + 1) for k in KEYS]
    theirs = [f"control {k}@{d}" for d in range(1, D + 1) for k in KEYS[:2]]
    even, reads = np.zeros(D), np.zeros(D)  # prev's control: 1 / visible keys, summed per hop
    samples = []
    for n, ex in enumerate(examples):
        seq, defined = ex["tokens"], _definitions(task, ex["tokens"])
        links = []
        for pos, value, hop in ex["dense"]:
            links.append((f"prev@{hop}", pos, pos - 1, 1.0))
            even[hop - 1] += 1.0 / (pos + 1)
            reads[hop - 1] += 1
            others = [r for r, v, k in ex["dense"] if k == hop - 1 and v != value and r < pos]  # their refs
            if hop < 2 or not others or defined.get(seq[pos], pos) >= pos - 1:
                continue
            at = defined[seq[pos]]
            for key, shift in (("def-var", 0), ("def-ref", 1)):
                links.append((f"{key}@{hop}", pos, at + shift, 1.0))
                links += [(f"control {key}@{hop}", pos, r - 1 + shift, 1.0 / len(others)) for r in others]
        samples.append(link_sample(n, seq, links))
    mass = pooled_mass(model, samples, mine + theirs, route)
    L, H = mass.shape[:2]
    prof = mass[..., :len(mine)].reshape(L, H, D, len(KEYS))
    control = np.full_like(prof, np.nan)
    control[..., :2] = mass[..., len(mine):].reshape(L, H, D, 2)
    with np.errstate(invalid="ignore"):
        control[..., KEYS.index("prev")] = (even / np.where(reads, reads, np.nan))[None, None, :]
    return prof, control


def hop_labels(profile: np.ndarray, control: np.ndarray, min_lift: float) -> list[list[str]]:
    lift = np.nan_to_num(profile - control, nan=-1.0)  # (L, H, D, keys)
    out = []
    for layer in range(lift.shape[0]):
        row = []
        for h in range(lift.shape[1]):
            d, k = np.unravel_index(np.argmax(lift[layer, h]), lift.shape[2:])
            row.append(f"ref→{KEYS[k]}@{d + 1}" if lift[layer, h, d, k] >= min_lift else "-")
        out.append(row)
    return out


def _lift_of(profile: np.ndarray, control: np.ndarray, layer: int, head: int, label: str) -> float:
    key, hop = label.split("→")[1].split("@")
    at = (layer, head, int(hop) - 1, KEYS.index(key))
    return float(profile[at] - control[at])


def _ablated_hops(model: Transformer, heads: dict[int, list[int]], exs: list[dict[str, Any]]) -> dict[str, float]:
    with ablated(model, model.cfg.n_layers, model.cfg.n_heads, heads):
        return hop_accuracy(model, exs)


def hop_ablation(model: Transformer, labels: list[list[str]], exs: list[dict[str, Any]], draws: int,
                 seed: int) -> dict[str, Any]:
    """Per label, per-hop accuracy with its heads zeroed, and the mean over ``draws`` random sets of as many heads
    per layer (:func:`headlab.retrieval.controls.control_sets`: which ones, recorded)."""
    H = model.cfg.n_heads
    rng = random.Random(seed)
    rows = {}
    for lab in sorted({x for row in labels for x in row if x != "-"}):
        heads: dict[int, list[int]] = {}
        for layer, row in enumerate(labels):
            if lab in row:
                heads[layer] = [h for h, x in enumerate(row) if x == lab]
        sets, matched = control_sets(heads, model.cfg.n_layers, H, draws, rng)
        ctrl = [_ablated_hops(model, pick, exs) for pick in sets]
        rows[lab] = {"heads": [head_name(l, h) for l, hs in heads.items() for h in hs],
                     "ablated": _ablated_hops(model, heads, exs),
                     "control": {k: float(np.mean([c[k] for c in ctrl])) for k in ctrl[0]} if ctrl else None,
                     "control_draws": len(ctrl), "control_matched": matched if ctrl else WHOLE}
    return {"base": hop_accuracy(model, exs), "by_label": rows}


def per_step(scores: list[dict[str, np.ndarray]]) -> dict[str, list[Any]]:
    """Per-checkpoint score dicts as one JSON series per score: name -> [(L, H) per checkpoint]."""
    return {m: [np.round(s[m], 4).tolist() for s in scores] for m in (scores[0] if scores else {})}


def hop_emergence(run: Any, task: RetrievalTask, labels: list[list[str]], probes: list[dict[str, Any]],
                  min_lift: float) -> dict[str, Any]:
    """Each labelled head's lift at its label over the checkpoints and the step it emerges; the first
    evaluation at which each hop count is solved."""
    steps, lifts, shown = [], [], []
    kinds = sorted({lab for row in labels for lab in row if lab != "-"})
    for step, m in checkpoint_models(run):
        prof, control = hop_profile(m, task, probes)
        steps.append(step)
        lifts.append({head_name(l, h): _lift_of(prof, control, l, h, lab)
                      for l, row in enumerate(labels) for h, lab in enumerate(row) if lab != "-"})
        shown.append(hop_view_scores(prof, control, kinds))
    heads = sorted(lifts[-1]) if lifts else []
    when = {k: emergence_step(steps, [x[k] for x in lifts], min_lift) for k in heads}
    order = [k for _, k in sorted((s, k) for k, s in when.items() if s is not None)]
    evals = read_jsonl(run / "eval.jsonl") if (run / "eval.jsonl").exists() else []
    solved = {h: next((r["step"] for r in evals if r.get("hops", {}).get(h, 0) >= SOLVED), None)
              for h in (evals[-1].get("hops", {}) if evals else {})}
    return {"steps": steps, "lift": {k: [round(x[k], 4) for x in lifts] for k in heads}, "emerged_at": when,
            "order": [f"{k} ({labels[int(k.split('.')[0])][int(k.split('.')[1])]})" for k in order],
            "hop_solved_at": solved, "scores": per_step(shown)}


def hop_analysis(run: Any, model: Transformer, task: RetrievalTask, probes: list[dict[str, Any]],
                 test: list[dict[str, Any]], draws: int, min_lift: float, seed: int) -> dict[str, Any]:
    prof, control = hop_profile(model, task, probes)
    labels = hop_labels(prof, control, min_lift)
    return {"keys": KEYS, "min_lift": min_lift, "labels": labels,  # -1: no such key at that hop
            "mass": np.nan_to_num(prof, nan=-1).round(4).tolist(),
            "control": np.nan_to_num(control, nan=-1).round(4).tolist(),
            "ablation": hop_ablation(model, labels, test, draws, seed),
            "stack": hop_stack(model, test, prof - control, KEYS, min_lift),
            "emergence": hop_emergence(run, task, labels, probes[:16], min_lift)}


def hop_circuit(h: dict[str, Any]) -> list[dict[str, Any]]:
    """The hop-labelled heads as circuit rows (head, layer, label with the hops the head carries, mass: the
    label's lift)."""
    prof, control = np.asarray(h["mass"]), np.asarray(h["control"])
    shown = stacked_labels(h["labels"], h.get("stack"))
    return [{"head": head_name(l, i), "layer": l, "label": shown[l][i], "mass": _lift_of(prof, control, l, i, lab)}
            for l, row in enumerate(h["labels"]) for i, lab in enumerate(row) if lab != "-"]


def hop_view_scores(prof: np.ndarray, control: np.ndarray, kinds: Sequence[str]) -> dict[str, np.ndarray]:
    """One checkpoint's scores as a page shows them: each head's best lift, and its lift at each label kind."""
    lift = np.nan_to_num(prof - control, nan=-1.0)
    L, H = lift.shape[:2]
    sc = {"best hop lift": lift.reshape(L, H, -1).max(-1)}
    for k in kinds:
        key, hop = k.split("→")[1].split("@")
        sc[k] = lift[:, :, int(hop) - 1, KEYS.index(key)]
    return sc


def hops_markdown(h: dict[str, Any]) -> list[str]:
    """The hop labels, the per-label ablation and the emergence order, as markdown lines."""
    L, H = len(h["labels"]), len(h["labels"][0])
    lines = ["## Hops (dense targets)", "",
             f"A head's label: the (key, hop) where its attention from hop-k references most exceeds its control "
             f"(the distractor chain's same key; for prev, even attention), if by at least {h['min_lift']} "
             "(`ref→def-ref@2`: at hop 2 it reads the referent's reference).", "",
             "| layer | " + " | ".join(f"head {i}" for i in range(H)) + " |", "|---|" + "---|" * H]
    lines += [f"| {layer} | " + " | ".join(h["labels"][layer]) + " |" for layer in range(L)]
    a = h["ablation"]
    hops = sorted(a["base"], key=int)
    lines += ["", "| heads zeroed | " + " | ".join(f"hop {k}" for k in hops) + " |", "|---|" + "---|" * len(hops),
              "| none | " + " | ".join(f"{a['base'][k]:.2f}" for k in hops) + " |"]
    for lab, r in a["by_label"].items():
        ctrl = r["control"]
        lines.append(f"| {lab} ({', '.join(r['heads'])}) | " + " | ".join(
            f"{r['ablated'][k]:.2f}" + (f" (random {ctrl[k]:.2f})" if ctrl else "") for k in hops) + " |")
    e = h["emergence"]
    lines += ["", f"Emergence order: {', '.join(e['order']) or 'none'}; hops solved (>= {SOLVED}) first at: "
              + ", ".join(f"hop {k} step {s}" for k, s in sorted(e["hop_solved_at"].items(), key=lambda x: int(x[0])))]
    return lines + (["", *stack_markdown(h["stack"])] if h.get("stack") else [])
