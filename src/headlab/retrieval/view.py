"""A retrieval run's view: the labelled circuit and each checkpoint's scores as ``headlab retrieval analyze``
recorded them, and every checkpoint's maps of one probe example, its chain highlighted.

A run not analyzed, or analyzed before the analysis kept every checkpoint's scores, shows its maps and says what
to run; nothing is measured here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from headlab.nn import as_loaded
from headlab.progress import bar as progress_bar
from headlab.result import found_in
from headlab.retrieval.analysis import AnalyzeResult, probe_examples
from headlab.retrieval.hops import hop_circuit
from headlab.retrieval.record import RunTask
from headlab.retrieval.stack import stacked_labels
from headlab.retrieval.training import load_run
from headlab.training import checkpoint as ckpt
from headlab.views.data import ViewData, ViewSample, store_maps
from headlab.views.sources import FolderSource, Shown, register_source


def probe_example(task: Any) -> ViewSample:
    """The first probe example the analysis scores, as tokens, with the chain marked."""
    ex = probe_examples(task, 1)[0]
    seq = ex["tokens"] + (ex["chain"][:-1] if task.curriculum == "chain" else [])
    v = task.vocab
    names = {v.PAD: "<pad>", v.BOS: "<bos>", v.QUERY: "<query>", v.SEP: "<sep>"}
    tokens = [names.get(t) or (f"x{t - 4}" if v.is_var(t) else f"v{t - 4 - v.n_vars}") for t in seq]
    chain = set(ex["chain"]) | {seq[len(ex["tokens"]) - 1]}
    answer = f"v{ex['answer'] - 4 - v.n_vars}"
    return ViewSample(f"probe example, depth {task.depth}, answer {answer}", seq, tokens,
                      [i for i, t in enumerate(seq) if t in chain])


def recorded_scores(a: AnalyzeResult | None, steps: list[int | None]) -> tuple[list[dict[str, np.ndarray]], str]:
    """Each checkpoint's scores as the analysis recorded them (a dense run's hop lifts, else label masses), and
    the note that says what they are or what to run."""
    em = None if a is None else (a.hops["emergence"] if a.hops else a.emergence)
    if em is None or not em.get("scores"):
        what = "not analyzed" if a is None else "analyzed before each checkpoint's scores were kept"
        return [{} for _ in steps], f"Scores: none (this run was {what}; run headlab retrieval analyze RUN)."
    at = {s: k for k, s in enumerate(em["steps"])}
    scores = [{m: np.asarray(v[at[s]], dtype=float) for m, v in em["scores"].items()} if s in at else {}
              for s in steps]
    return scores, ("Scores: each hop label's attention above its control (the distractor chain's same key; its "
                    "lift) on 16 probe examples (headlab retrieval analyze, dense targets); the chain's tokens are "
                    "highlighted." if a is not None and a.hops else
                    "Scores: attention mass of each reader→key kind on 16 probe examples (headlab retrieval "
                    "analyze); the chain's tokens are highlighted.")


def from_retrieval(run: Path, shown: Shown) -> ViewData:
    """A retrieval run: the labelled circuit, each checkpoint's recorded scores, maps of one probe example."""
    model, task = load_run(run)
    a = AnalyzeResult.read(run / "analyze") if AnalyzeResult in found_in(run / "analyze") else None
    labels, circuit = (None, None) if a is None else (a.labels, a.circuit)
    if a is not None and a.hops:  # a dense run: its heads carry their hop labels, scored by lift over even attention
        labels, circuit = stacked_labels(a.hops["labels"], a.hops.get("stack")), hop_circuit(a.hops)
    cks = ckpt.checkpoints(run)
    steps: list[int | None] = [s for s, _ in cks] or [None]
    scores, note = recorded_scores(a, steps)
    L, H = model.cfg.n_layers, model.cfg.n_heads
    data = ViewData(title=f"headlab · retrieval run {run.name}", subtitle=f"{L} layers × {H} heads, depth "
                    f"{task.depth}, curriculum {task.curriculum}", kind="retrieval", n_layers=L, n_heads=H,
                    causal=True, samples=[probe_example(task)], steps=steps, scores=scores, labels=labels,
                    circuit=circuit, notes=[note], scale=shown.scale, marked_label="the chain")
    bar = progress_bar(max(1, len(cks)), f"view {run.name}: checkpoints", "checkpoint", shown.progress)
    for c, (_, folder) in enumerate(cks or [(None, None)]):
        m = load_run(run, folder)[0] if folder is not None else model
        store_maps(data, as_loaded(m, None, run.name), c)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return data


register_source(FolderSource("retrieval", "a retrieval run (task.json)", lambda p: RunTask in found_in(p),
                             from_retrieval, rank=0))
