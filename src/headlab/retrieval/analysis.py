"""``headlab retrieval analyze RUN``: label each head by what it attends to, check by ablation, emergence order.

On probe examples at full depth (minimal form), each head's attention is read from three kinds of *reader*
positions and summed over kinds of *key* positions (ours, automatic from the attention maps):

* readers: ``query`` — the queried variable and, under the ``chain`` curriculum, every emitted chain variable
  (each has to find what it refers to); ``ref`` — the reference token of each (variable, reference) pair;
  ``var`` — the variable token of each pair;
* keys, for a reader holding variable or reference token X: ``def-var`` — the position where X is *defined*
  (X as a pair's variable); ``def-ref`` — the reference right after that definition (the induction-like hop:
  find X earlier, read the token after it); ``prev`` — the previous token; ``bos`` — the first token.

A head's label is ``reader→key`` for its largest mean mass, if that mass is at least ``min_mass`` (0.3),
else ``-``. The circuit is the table of labelled heads by layer. The ablation check zero-ablates the labelled
heads and, over ``draws`` draws, as many random heads per layer (:mod:`headlab.retrieval.controls` says which), and
compares full-depth accuracy, with ``headlab ablate``'s interval and permutation p.
Emergence: over the run's checkpoints, the first step from which each labelled head's label mass stays at or
above ``min_mass``; the order of emergence is the heads sorted by that step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headlab.attention.routes import AUTO
from headlab.formation.emergence import EmergenceResult, emergence_table
from headlab.formation.phases import emergence_step
from headlab.head import Head
from headlab.head import name as head_name
from headlab.io import read_jsonl, write_text_atomic
from headlab.nn import Transformer
from headlab.plotting import new_figure, save_figure
from headlab.result import Result
from headlab.retrieval.controls import circuit_ablation
from headlab.retrieval.hops import hop_analysis, hops_markdown, per_step
from headlab.retrieval.probes import link_sample, pooled_mass
from headlab.retrieval.settings import AnalyzeSettings
from headlab.retrieval.training import RetrievalTask, checkpoint_models, eval_set, load_run

READERS = ("query", "ref", "var")
KEYS = ("def-var", "def-ref", "prev", "bos")

#: the probe examples' seed: fixed, so two analyses of one run read the same examples
PROBE_SEED = 0


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _positions(
    task: RetrievalTask, ex: dict[str, Any]
) -> tuple[list[int], dict[str, list[tuple[int, dict[str, int]]]]]:
    """The input sequence and, per reader kind, (reader position, {key kind: key position})."""
    seq = ex["tokens"] + (ex["chain"][:-1] if task.curriculum == "chain" else [])
    stride = 3 if task.separator else 2  # (variable, reference[, <sep>])
    n_pairs = (len(ex["tokens"]) - 3) // stride
    defined = {ex["tokens"][1 + stride * j]: 1 + stride * j for j in range(n_pairs)}  # variable -> its position
    readers: dict[str, list[tuple[int, dict[str, int]]]] = {r: [] for r in READERS}

    def keys(pos: int, tok: int) -> dict[str, int]:
        k = {"prev": pos - 1, "bos": 0}
        if tok in defined and defined[tok] < pos - 1:
            k["def-var"], k["def-ref"] = defined[tok], defined[tok] + 1
        return k

    for j in range(n_pairs):
        pv, pr = 1 + stride * j, 2 + stride * j
        readers["var"].append((pv, keys(pv, seq[pv])))
        readers["ref"].append((pr, keys(pr, seq[pr])))
    for pos in range(len(ex["tokens"]) - 1, len(seq)):
        readers["query"].append((pos, keys(pos, seq[pos])))
    return seq, readers


def head_profile(model: Transformer, task: RetrievalTask, examples: list[dict[str, Any]],
                 route: str = AUTO) -> np.ndarray:
    """(L, H, readers, keys) mean attention mass, 0 where no reader has that key."""
    labels = [f"{r}→{k}" for r in READERS for k in KEYS]
    samples = []
    for n, ex in enumerate(examples):
        seq, readers = _positions(task, ex)
        links = [(f"{r}→{k}", pos, keys[k], 1.0) for r in READERS for pos, keys in readers[r]
                 for k in KEYS if k in keys and keys[k] >= 0]
        samples.append(link_sample(n, seq, links))
    mass = pooled_mass(model, samples, labels, route)  # (L, H, readers · keys)
    return np.nan_to_num(mass).reshape(*mass.shape[:2], len(READERS), len(KEYS))


def labels_of(profile: np.ndarray, min_mass: float) -> list[list[str]]:
    L, H = profile.shape[:2]
    out = []
    for layer in range(L):
        row = []
        for h in range(H):
            p = profile[layer, h].copy()
            p[:, KEYS.index("bos")] = 0  # a sink is not a retrieval role
            ri, ki = np.unravel_index(np.argmax(p), p.shape)
            row.append(f"{READERS[ri]}→{KEYS[ki]}" if p[ri, ki] >= min_mass else "-")
        out.append(row)
    return out


def label_scores(profile: np.ndarray, kinds: Sequence[str]) -> dict[str, np.ndarray]:
    """One checkpoint's scores as a page shows them: each head's largest mass of any role (a sink is none), and
    its mass at each label kind."""
    masked = profile.copy()
    masked[..., KEYS.index("bos")] = 0  # a sink is not a retrieval role (as in labels_of)
    L, H = profile.shape[:2]
    sc = {"best label mass": masked.reshape(L, H, -1).max(-1)}
    sc.update({k: profile[:, :, READERS.index(k.split("→")[0]), KEYS.index(k.split("→")[1])] for k in kinds})
    return sc


def circuit_of(profile: np.ndarray, labels: list[list[str]]) -> list[dict[str, Any]]:
    """The labelled heads as rows: head, layer, label and the label's mean mass."""
    return [
        {
            "head": head_name(l, h),
            "layer": l,
            "label": lab,
            "mass": float(profile[l, h][READERS.index(lab.split("→")[0]), KEYS.index(lab.split("→")[1])]),
        }
        for l, row in enumerate(labels)
        for h, lab in enumerate(row)
        if lab != "-"
    ]


@dataclass
class AnalyzeResult(Result):
    """``analyze.json``: head labels from attention maps, the circuit, the ablation check, the emergence steps."""

    KIND = "analyze.json"
    COMPANIONS = ("analyze.md", "circuit.png")
    run: str
    task: dict[str, Any]
    labels: list[list[str]]
    circuit: list[dict[str, Any]]
    profile: dict[str, Any]
    ablation: dict[str, Any]
    emergence: dict[str, Any]
    hops: dict[str, Any] | None = None  # a dense run's hop labels (headlab.retrieval.hops)

    def markdown(self) -> str:
        return analysis_markdown(self)

    def figure(self) -> Any:
        """The labelled circuit (matplotlib figure)."""
        return circuit_figure(self)


def probe_examples(task: RetrievalTask, n: int, seed: int = PROBE_SEED) -> list[dict[str, Any]]:
    """The ``n`` held-out examples an analysis labels heads on (and a page shows the first of)."""
    return eval_set(task, n, seed + 2 * 10**6, task.depth)


def analyze(run: str | Path, settings: AnalyzeSettings, seed: int = PROBE_SEED) -> AnalyzeResult:
    run = Path(run)
    n, draws, min_mass, min_lift = settings.n, settings.draws, settings.min_mass, settings.min_lift
    model, task = load_run(run)
    probes = probe_examples(task, n, seed)
    prof = head_profile(model, task, probes)
    labels = labels_of(prof, min_mass)
    test = eval_set(task, 256, seed + 3 * 10**6, task.depth)
    return AnalyzeResult(
        run=str(run),
        task=task.to_json(),
        labels=labels,
        circuit=circuit_of(prof, labels),
        profile={"readers": READERS, "keys": KEYS, "mass": prof.round(4).tolist()},
        ablation=circuit_ablation(model, task, labels, test, draws, seed),
        emergence=emergence(run, model, task, labels, probes[:16], min_mass),
        hops=hop_analysis(run, model, task, probes, test, draws, min_lift, seed) if task.curriculum == "dense"
        else None,
    )


def emergence(
    run: Path,
    model: Transformer,
    task: RetrievalTask,
    labels: list[list[str]],
    probes: list[dict[str, Any]],
    min_mass: float,
) -> dict[str, Any]:
    steps, masses, shown = [], [], []
    kinds = sorted({lab for row in labels for lab in row if lab != "-"})
    for step, m in checkpoint_models(run):
        prof = head_profile(m, task, probes)
        shown.append(label_scores(prof, kinds))
        row = {}
        for l, hs in enumerate(labels):
            for h, lab in enumerate(hs):
                if lab != "-":
                    r, k = lab.split("→")
                    row[head_name(l, h)] = float(prof[l, h, READERS.index(r), KEYS.index(k)])
        steps.append(step)
        masses.append(row)
    heads = sorted(masses[-1]) if masses else []
    when = {k: emergence_step(steps, [m[k] for m in masses], min_mass) for k in heads}
    order = sorted((s, k) for k, s in when.items() if s is not None)
    return {
        "steps": steps,
        "mass": {k: [m[k] for m in masses] for k in heads},
        "emerged_at": when,
        "order": [f"{k} ({labels[int(k.split('.')[0])][int(k.split('.')[1])]})" for _, k in order],
        "context": {k: training_context(run, s) for k, s in when.items() if s is not None},
        "scores": per_step(shown),
    }


def training_context(run: Path, step: int) -> dict[str, Any]:
    """The training loss and held-out accuracy by depth around ``step``: the loss logged at the last step at or
    before it, the accuracy of the first evaluation at or after it."""

    def rows(name: str) -> list[dict[str, Any]]:
        f = run / name
        return read_jsonl(f) if f.exists() else []

    loss = [r for r in rows("metrics.jsonl") if r["step"] <= step]
    acc = [r for r in rows("eval.jsonl") if r["step"] >= step]
    return {
        "loss": loss[-1]["loss"] if loss else None,
        "loss_step": loss[-1]["step"] if loss else None,
        "accuracy": acc[0]["accuracy"] if acc else None,
        "accuracy_step": acc[0]["step"] if acc else None,
    }


def write_analysis(r: AnalyzeResult, out: Path) -> None:
    r.write(out)
    write_text_atomic(out / "analyze.md", analysis_markdown(r))
    save_figure(circuit_figure(r), out / "circuit.png")


def analysis_markdown(r: AnalyzeResult) -> str:
    """The labelled circuit, the ablation check and the emergence steps (``analyze.md``)."""
    L = len(r["labels"])
    lines = [
        "# Retrieval circuit",
        "",
        f"Run {r['run']}, task {r['task']}",
        "",
        "| layer | " + " | ".join(f"head {h}" for h in range(len(r["labels"][0]))) + " |",
        "|---|" + "---|" * len(r["labels"][0]),
    ]
    for l in range(L):
        lines.append(f"| {l} | " + " | ".join(r["labels"][l]) + " |")
    a = r["ablation"]
    lines += [
        "",
        f"Ablation: full-depth accuracy {a['accuracy_base']:.3f}; labelled heads ablated "
        f"{a['accuracy_labelled_ablated']:.3f}; " + _controls_said(a),
    ]
    if a.get("single_head"):  # older analyses lack it
        lines.append("One head at a time: " + ", ".join(
            f"{k} ({r['labels'][int(k.split('.')[0])][int(k.split('.')[1])]}) {v:.2f}"
            for k, v in a["single_head"].items()) + ".")
    lines += [
        "",
        "Emergence order: " + (", ".join(r["emergence"]["order"]) or "none emerged"),
    ]
    ctx = r["emergence"].get("context", {})
    if ctx:
        lines += [
            "",
            "| head | label | emerged at step | training loss then | held-out accuracy by depth (step) |",
            "|---|---|---|---|---|",
        ]
        for k, step in sorted(
            ((k, v) for k, v in r["emergence"]["emerged_at"].items() if v is not None), key=lambda kv: kv[1]
        ):
            c = ctx.get(k, {})
            lab = r["labels"][Head.parse(k).layer][Head.parse(k).head]
            acc = ", ".join(f"D{d} {v:.2f}" for d, v in (c.get("accuracy") or {}).items())
            loss = "n/a" if c.get("loss") is None else f"{c['loss']:.3f}"
            lines.append(f"| {k} | {lab} | {step} | {loss} | {acc or 'n/a'} ({c.get('accuracy_step')}) |")
    if r.hops:
        lines += ["", *hops_markdown(r.hops)]
    return "\n".join(lines) + "\n"


def circuit_figure(r: AnalyzeResult) -> Any:
    """Each head's reader→key label in a layers x heads grid (matplotlib figure)."""
    # deferred: matplotlib takes ~0.6 s to import and only figures need it
    from matplotlib.patches import Rectangle

    L = len(r["labels"])
    fig = new_figure(figsize=(1.6 * len(r["labels"][0]) + 1, 1.1 * L + 1))
    ax = fig.subplots()
    for l in range(L):
        for h, lab in enumerate(r["labels"][l]):
            ax.add_patch(Rectangle((h, l), 0.9, 0.9, color="#9ecae1" if lab != "-" else "#eeeeee"))
            ax.text(h + 0.45, l + 0.45, lab, ha="center", va="center", fontsize=7)
    ax.set(
        xlim=(0, len(r["labels"][0])),
        ylim=(0, L),
        xlabel="head",
        ylabel="layer",
        title="retrieval circuit: reader→key label per head",
    )
    ax.set_xticks([h + 0.45 for h in range(len(r["labels"][0]))], [str(h) for h in range(len(r["labels"][0]))])
    ax.set_yticks([l + 0.45 for l in range(L)], [str(l) for l in range(L)])
    fig.tight_layout()
    return fig


def role_events(analysis: Any) -> list[tuple[str, int]]:
    """An analyzed run's events for :func:`headlab.formation.emergence.emergence_table`: ``L<layer>:<label>`` at
    each labelled head's emergence step, in step order (ties in the order the analysis lists its heads)."""
    em = analysis["emergence"]["emerged_at"]
    out = []
    for k, step in sorted(((k, s) for k, s in em.items() if s is not None), key=lambda kv: kv[1]):
        layer, head = Head.parse(k)
        out.append((f"L{layer}:{analysis['labels'][layer][head]}", step))
    return out


def by_key(role: str) -> str:
    """``L1:query→def-ref`` → ``L1:→def-ref``: a hop head read from the query in one seed and from the pairs in
    another counts as the same role."""
    layer, label = role.split(":", 1)
    return f"{layer}:→{label.split('→')[1]}"


def circuit_emergence(analyses: list[Any]) -> EmergenceResult:
    """Across analyzed runs (seeds): the order of their labelled heads' roles, by layer and label, and by layer
    and key (the reader dropped)."""
    return emergence_table([(a["run"], role_events(a)) for a in analyses], coarse=by_key)


def _controls_said(a: dict[str, Any]) -> str:
    """The matched controls of a circuit ablation in words; where none could be drawn, why (not "None")."""
    if not a["control_draws"]:
        return f"{a.get('control_note') or 'no labelled head to compare with matched random heads'}."
    p = f", permutation p {a['p_value']:.3g}" if a.get("p_value") is not None else ""
    return (f"matched random heads ({a['control_draws']} distinct sets) {_round(a['accuracy_control_mean'])}{p}.")
