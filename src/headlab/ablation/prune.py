"""Pruning curves (``headlab prune``): the metric against the fraction of heads removed (zero-ablated).

Orders: ``exact`` (least important first by single-head ablation), ``gradient`` (Michel importance, decoders),
``random`` (seeded), and ``exact-keep-specialized`` (the exact order, but the specialized heads — SDHs and the
top offset heads of a scan — are never removed). Steps of 10% of all heads.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from headlab.ablation.heads import ablated, parse_heads
from headlab.ablation.importance import IMPORTANCE, ImportanceSettings, importance, pooled_metric
from headlab.ablation.metrics import load_for_metric, metric_batches, reference_hidden
from headlab.head import Head
from headlab.io import write_text_atomic
from headlab.plotting import new_figure, save_figure
from headlab.progress import bar as progress_bar
from headlab.result import Result


def _heads_dict(order: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for layer, head in order:
        out.setdefault(layer, []).append(head)
    return out


@dataclass
class PruneResult(Result):
    """``prune.json``: the metric after removing each fraction of heads, per removal order (null: unreachable)."""

    KIND = "prune.json"
    COMPANIONS = ("prune.md", "prune.png")
    model: str
    metric: str
    fractions: list[float]
    curves: dict[str, list[float | None]]
    kept: list[Head]
    n_heads: int
    importance: dict[str, Any]

    def markdown(self) -> str:
        """The metric after removing each fraction of the heads, one column per removal order."""
        orders = list(self.curves)
        lines = [f"**{self.model}**: {self.metric} after removing a fraction of its {self.n_heads} heads "
                 "(- : the order cannot remove that many)", "",
                 "| removed | " + " | ".join(orders) + " |", "|---|" + "---|" * len(orders)]
        for i, x in enumerate(self.fractions):
            cells = ["-" if self.curves[o][i] is None else f"{self.curves[o][i]:.4f}" for o in orders]
            lines.append(f"| {x:.0%} | " + " | ".join(cells) + " |")
        if self.kept:
            lines += ["", f"Kept in exact-keep-specialized: {', '.join(map(str, self.kept))}."]
        return "\n".join(lines) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "prune.md", self.markdown())

    def records(self) -> list[dict[str, Any]]:
        """One row per (removal order, fraction removed): the metric, None where the order cannot get there."""
        return [{"order": name, "fraction": x, self.metric: y}
                for name, ys in self.curves.items() for x, y in zip(self.fractions, ys)]

    def figure(self) -> Any:
        """The pruning curves as a matplotlib figure."""
        return prune_figure(self)


def prune_curves(model: Any, keep: Sequence[str] = (), settings: ImportanceSettings = IMPORTANCE, *,
                 progress: bool, device: str) -> PruneResult:
    """Curves of the metric (importance's) for each order; ``keep`` names the specialized heads (``L.H``)."""
    st = settings
    loaded = load_for_metric(model, device, st.dtype)
    f = loaded.facts
    parsed = parse_heads(list(keep), f.n_layers, f.n_heads)  # checked before the work: no unknown head is kept
    batches = metric_batches(loaded, st.samples, st.window, st.seed, st.batch_size, st.corpus)
    base_hidden = reference_hidden(loaded, batches)
    imp = importance(loaded, st, batches=batches, base_hidden=base_hidden, progress=progress, device=device)
    heads = [(h["layer"], h["head"]) for h in imp.heads]
    exact = {(h["layer"], h["head"]): h["exact_delta"] for h in imp.heads}
    orders = {"exact": sorted(heads, key=lambda x: exact[x]),
              "random": random.Random(st.seed).sample(heads, len(heads))}
    if imp.spearman_exact_vs_gradient is not None:
        grad = {(h["layer"], h["head"]): h["gradient"] for h in imp.heads}
        orders["gradient"] = sorted(heads, key=lambda x: grad[x])
    keep_set = {(layer, h) for layer, hs in parsed.items() for h in hs}
    if keep_set:
        orders["exact-keep-specialized"] = [x for x in orders["exact"] if x not in keep_set]
    steps = [round(0.1 * i, 1) for i in range(11)]
    total = len(heads)
    curves: dict[str, list[float | None]] = {}
    with torch.inference_mode():
        bar = progress_bar(len(orders) * len(steps), f"prune {loaded.name}", "point", progress)
        for name, order in orders.items():
            curve: list[float | None] = []
            for frac in steps:
                n = int(round(frac * total))
                if n > len(order):  # kept heads make the full fraction unreachable
                    curve.append(None)
                else:
                    with ablated(loaded.model, f.n_layers, f.n_heads, _heads_dict(order[:n])):
                        curve.append(pooled_metric(loaded, batches, base_hidden))
                if bar is not None:
                    bar.update(1)
            curves[name] = curve
        if bar is not None:
            bar.close()
    return PruneResult(model=loaded.name, metric=imp.metric, fractions=list(steps), curves=curves,
                       kept=sorted(Head(l, h) for l, h in keep_set), n_heads=total,
                       importance={"spearman_exact_vs_gradient": imp.spearman_exact_vs_gradient})


def plot_prune(r: PruneResult, path: str | Path) -> None:
    save_figure(prune_figure(r), Path(path))


def prune_figure(r: PruneResult) -> Any:
    fig = new_figure(figsize=(6, 4))
    ax = fig.subplots()
    for i, (name, ys) in enumerate(r["curves"].items()):
        xs = [x for x, y in zip(r["fractions"], ys) if y is not None]
        ax.plot(xs, [y for y in ys if y is not None], marker="o", ms=3, color=f"C{i}", label=name)
    ax.set_xlabel("fraction of heads removed")
    ax.set_ylabel(r["metric"])
    ax.set_title(f"{r['model']}: pruning curves", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def write_prune(r: PruneResult, out_dir: str | Path) -> None:
    r.write(Path(out_dir))
    plot_prune(r, Path(out_dir) / "prune.png")
