"""Random head sets to hold a retrieval circuit's ablation against, and the comparison they give.

Where every layer of a circuit keeps as many unlabelled heads as it has labelled ones, the sets are ``headlab
ablate``'s (:func:`headlab.ablation.experiment.matched_controls`: as many random heads per layer, never a labelled
one). The retrieval models have 4 heads a layer and their analyses label 3 or 4 of them in most layers, where no
such set exists (most committed analyses). There the sets keep the same number of heads per layer but are
drawn from every head of that layer, labelled ones included, and are never the circuit itself: a weaker control (a
set shares heads with the circuit), recorded as such with its own words. Where every layer of the circuit is
labelled whole, no other set of those sizes per layer exists: the sets are then as many heads in all from every
layer of the model. Only a circuit that is the whole model has no control, said in one line.

The comparison is ``headlab ablate``'s: the change of the circuit's ablation against the mean change of the
controls', with a 95% bootstrap interval over the test examples and the one-sided permutation p (the share of
control sets that cost at least as much accuracy, counting the circuit itself).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Hashable, TypeVar

import numpy as np

from headlab.ablation.experiment import _boot_diff, matched_controls
from headlab.ablation.heads import HeadSet, ablated
from headlab.errors import HeadlabError
from headlab.io import write_text_atomic
from headlab.nn import Transformer
from headlab.result import Result
from headlab.retrieval.training import RetrievalTask, correct

#: a control set: layer -> heads
Picked = dict[int, list[int]]
K = TypeVar("K", bound=Hashable)
#: how each kind of control set is drawn, as a result records it
MATCHED = "same number of random heads per layer, never a labelled head"
OVERLAPPING = ("same number of random heads per layer, drawn from every head of the layer (labelled ones too), "
               "never the circuit itself: a layer had fewer unlabelled heads than labelled ones")
ANYWHERE = ("as many random heads in all, drawn from every layer of the model, never the circuit itself: each "
            "layer of the circuit was labelled whole, so no other set of its sizes per layer exists")
#: each kind of control set in a word, as a table shows it
SHORT = {MATCHED: "matched", OVERLAPPING: "same layers, overlapping", ANYWHERE: "any layer"}
#: why a circuit has no control
WHOLE = "no control exists: the circuit is every head of the model, so no other set of its size does"


def control_sets(heads: HeadSet, n_layers: int, n_heads: int, draws: int, rng: random.Random
                 ) -> tuple[list[Picked], str]:
    """Up to ``draws`` distinct control sets for the circuit ``heads`` (layer -> heads), and how they were drawn:
    :data:`MATCHED` where ``headlab ablate``'s sets exist, else :data:`OVERLAPPING`, else (every layer of the
    circuit labelled whole) :data:`ANYWHERE`; no sets where the circuit is the whole model."""
    if draws < 1:
        raise HeadlabError(f"draws={draws}: a circuit needs at least one control draw; pass --draws 10")
    try:
        return matched_controls(heads, n_heads, draws, rng), MATCHED
    except HeadlabError:
        pass
    sets = _overlapping(heads, n_heads, draws, rng)
    if sets:
        return sets, OVERLAPPING
    flat = frozenset((l, h) for l, hs in heads.items() for h in hs)
    pool = [(l, h) for l in range(n_layers) for h in range(n_heads)]
    picks = _distinct(math.comb(len(pool), len(flat)),
                      lambda: [frozenset(c) for c in itertools.combinations(pool, len(flat))],
                      lambda: frozenset(rng.sample(pool, len(flat))), flat, draws, rng)
    return [_by_layer(pick) for pick in picks], ANYWHERE


def _by_layer(pick: frozenset[tuple[int, int]]) -> Picked:
    out: dict[int, list[int]] = {}
    for l, h in sorted(pick):
        out.setdefault(l, []).append(h)
    return out


def _distinct(count: int, every: Callable[[], list[K]], draw: Callable[[], K], target: K, draws: int,
              rng: random.Random) -> list[K]:
    """Up to ``draws`` distinct sets, never ``target``: all ``every()`` of them (``count`` sets, ``target``
    among them), shuffled, where at most ``draws`` others exist; else ``draw()`` until that many are distinct."""
    if count - 1 <= draws:
        found = [pick for pick in every() if pick != target]
        rng.shuffle(found)
        return found
    seen, out = {target}, []
    while len(out) < draws:
        pick = draw()
        if pick not in seen:
            seen.add(pick)
            out.append(pick)
    return out


def _overlapping(heads: HeadSet, n_heads: int, draws: int, rng: random.Random) -> list[Picked]:
    """Distinct sets of ``len(heads[l])`` heads of each layer ``l`` drawn from all ``n_heads``, never ``heads``
    itself: every one of them in a random order where at most ``draws`` exist."""
    layers = sorted(heads)
    sizes = [len(set(heads[layer])) for layer in layers]
    target = tuple(tuple(sorted(set(heads[layer]))) for layer in layers)
    picks = _distinct(
        math.prod(math.comb(n_heads, k) for k in sizes),
        lambda: list(itertools.product(*(itertools.combinations(range(n_heads), k) for k in sizes))),
        lambda: tuple(tuple(sorted(rng.sample(range(n_heads), k))) for k in sizes), target, draws, rng)
    return [dict(zip(layers, map(list, pick))) for pick in picks]


def compared(base: np.ndarray, target: np.ndarray, controls: list[np.ndarray], matched: str,
             seed: int) -> dict[str, object] | None:
    """The circuit's ablation against its controls' on per-example correctness (``base``, ``target``: (n,) of the
    intact and the circuit-ablated model; ``controls``: one (n,) per set): ``headlab ablate``'s record of a
    control (draws, how matched, changes, difference with its interval, permutation p, each set's change); None
    without controls."""
    if not controls:
        return None
    base, target = base.astype(float), target.astype(float)
    ctrl = np.stack(controls).astype(float)  # (draws, n)
    d_t, d_c = float(target.mean() - base.mean()), ctrl.mean(1) - base.mean()
    lo, hi = _boot_diff(target - base, ctrl - base[None], np.random.default_rng(seed))
    costlier, milder = int((d_c <= d_t).sum()), int((d_c >= d_t).sum())  # than the circuit, or as much
    p = (1 + costlier) / (1 + len(d_c))
    return {"draws": len(d_c), "matched": matched, "delta_target": d_t, "delta_mean": float(d_c.mean()),
            "difference": float(d_t - d_c.mean()), "interval": [lo, hi], "p_value": p,
            "p_two_sided": min(1.0, 2 * min(p, (1 + milder) / (1 + len(d_c)))),
            "per_set": [float(x) for x in d_c]}


def _ablated_correct(model: Transformer, task: RetrievalTask, heads: HeadSet, exs: list[dict[str, Any]]) -> np.ndarray:
    with ablated(model, model.cfg.n_layers, model.cfg.n_heads, heads):
        return correct(model, task, exs)


def circuit_ablation(model: Transformer, task: RetrievalTask, labels: list[list[str]], test: list[dict[str, Any]],
                     draws: int, seed: int) -> dict[str, Any]:
    """The labelled heads of ``labels`` (``-``: none) zero-ablated together on ``test``, against their control sets
    (``control``: :func:`compared`, None where none exists, ``control_note`` says why), and every head alone."""
    L, H = model.cfg.n_layers, model.cfg.n_heads
    labelled = {l: [h for h in range(H) if labels[l][h] != "-"] for l in range(L)}
    labelled = {l: hs for l, hs in labelled.items() if hs}
    intact = correct(model, task, test)
    hit = _ablated_correct(model, task, labelled, test) if labelled else intact
    sets, matched = control_sets(labelled, L, H, draws, random.Random(seed)) if labelled else ([], MATCHED)
    ctrl = [_ablated_correct(model, task, pick, test) for pick in sets]
    return {
        "accuracy_base": float(intact.mean()),
        "accuracy_labelled_ablated": float(hit.mean()),
        "control_draws": len(ctrl),
        "accuracy_control_mean": float(np.mean(ctrl)) if ctrl else None,
        # permutation p, as headlab ablate's: that a set of random heads costs as much accuracy
        "p_value": (1 + sum(c.mean() <= hit.mean() for c in ctrl)) / (1 + len(ctrl)) if ctrl else None,
        "control_note": None if ctrl or not labelled else WHOLE,
        "control": compared(intact, hit, ctrl, matched, seed),
        # every head alone: a control that exists even when a layer's heads are all labelled
        "single_head": {f"{l}.{h}": float(_ablated_correct(model, task, {l: [h]}, test).mean())
                        for l in range(L) for h in range(H)},
    }


@dataclass
class CircuitControls(Result):
    """``controls.json``: a committed analysis's circuit (its labels, as committed) ablated in a model trained
    again from the run's own record (same settings and seed), against its control sets. The committed runs kept no
    weights; ``replica`` says how close the new training came to the committed one (each evaluation's accuracies,
    the largest difference), so a reader can tell a replica from the run."""

    KIND: ClassVar[str] = "controls.json"
    COMPANIONS: ClassVar[tuple[str, ...]] = ("controls.md",)
    run: str
    labels: list[list[str]]
    replica: dict[str, Any]
    ablation: dict[str, Any]

    @classmethod
    def decode(cls, d: dict[str, Any]) -> "CircuitControls":
        a, shares = d["ablation"], ("accuracy_base", "accuracy_labelled_ablated", "accuracy_control_mean")
        bad = [k for k in shares if a.get(k) is not None and not 0 <= a[k] <= 1]
        c = a.get("control")
        if c is not None and not (c["draws"] == len(c["per_set"]) == a["control_draws"]
                                  and 0 < c["p_value"] <= 1 and c["interval"][0] <= c["interval"][1]):
            bad.append("control (draws, p or interval)")
        if bad:
            raise HeadlabError(f"{cls.KIND}: {bad[0]} out of its range; the file was edited or damaged")
        return super().decode(d)

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "controls.md", self.markdown())

    def markdown(self) -> str:
        a, c = self.ablation, self.ablation.get("control")
        said = (f"{c['draws']} control sets ({c['matched']}): mean change {c['delta_mean']:+.3f}, difference "
                f"{c['difference']:+.3f} [{c['interval'][0]:+.3f}, {c['interval'][1]:+.3f}], permutation p "
                f"{c['p_value']:.3g}" if c else a.get("control_note") or "no labelled head")
        return (f"# Circuit controls of {self.run}\n\nReplica: {self.replica['agreement']}.\n\nAccuracy "
                f"{a['accuracy_base']:.3f}; the committed circuit ablated {a['accuracy_labelled_ablated']:.3f}; "
                f"{said}.\n")
