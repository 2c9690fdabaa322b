"""The report sections of ablation's results: a head set against matched random heads, head importance, pruning
curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from headlab.ablation.importance import ImportanceResult
from headlab.ablation.prune import PruneResult
from headlab.ablation.result import AblateResult
from headlab.plotting import save_figure
from headlab.presenting import figures
from headlab.presenting.sections import Section, copy_figure, fmt, img, section


@section("ablation", AblateResult, 40)
def ablation_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = AblateResult.read(folder)
    m = d["metric"]
    c = d["control"]
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    scored, rest = d.part_names()
    bars: list[tuple[str, float, str, Any]] = [(scored, d["scored"][m]["delta"], "#e65100", None)]
    if d["rest"]:
        bars.append((rest, d["rest"][m]["delta"], "#607d8b", None))
    spread = np.percentile(c["per_set"], [2.5, 97.5]) if c.get("per_set") else None  # 95% of the random sets
    err = None if spread is None else [[c["delta_mean"] - spread[0]], [spread[1] - c["delta_mean"]]]
    bars.append((f"matched random\n({c['draws']} sets, on {scored})", c["delta_mean"], "#9e9e9e", err))
    for name, value, colour, yerr in bars:
        ax.bar(name, value, color=colour, yerr=yerr, capsize=4)
    ax.axhline(0, color="black", lw=0.6)
    lo, hi = c["interval"]
    ax.set_title(f"{d['model']}: ablating {', '.join(d['heads'])} ({d['mode']})\ntarget − random on {scored}: "
                 f"{fmt(c['difference'])} [{fmt(lo)}, {fmt(hi)}] (95%)", fontsize=9)
    ax.set(ylabel=f"change in {m}", xlabel="tokens scored" + ("; whisker: 95% of the random sets" if err else ""))
    fig.tight_layout()
    path = figdir / f"{tag}-ablation.png"
    save_figure(fig, path)
    lines = [f"Heads {', '.join(d['heads'])} of **{d['model']}**, {d['mode']}-ablated; {d['n_samples']} samples, "
             f"{d['n_tokens']} tokens; scored tokens: {d['scored_definition']}.", "", img(path, figdir, "ablation"),
             "", f"| metric | {scored}: base → ablated (Δ) | {rest}: base → ablated (Δ) |", "|---|---|---|"]
    cell = lambda v: f"{fmt(v['base'])} → {fmt(v['ablated'])} ({fmt(v['delta'])})" if v else "-"  # noqa: E731
    for k in d["metrics"]:
        lines.append(f"| {k} | {cell(d['scored'][k])} | {cell(d['rest'].get(k))} |")
    lines += ["", f"Control ({c['matched']}): target Δ {fmt(c['delta_target'])} vs mean of random sets "
              f"{fmt(c['delta_mean'])}; difference {fmt(c['difference'])}, interval "
              f"[{fmt(c['interval'][0])}, {fmt(c['interval'][1])}], p = {fmt(c['p_value'])}."]
    finding = (f"ablating {', '.join(d['heads'])} changes {m} by {fmt(c['delta_target'])} against "
               f"{fmt(c['delta_mean'])} for matched random heads (difference {fmt(c['difference'])}, "
               f"[{fmt(c['interval'][0])}, {fmt(c['interval'][1])}], p = {fmt(c['p_value'])})")
    return Section(f"Ablation — {d['model']}", "\n".join(lines), [path], finding)


@section("importance", ImportanceResult, 50)
def importance_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = ImportanceResult.read(folder)
    L = 1 + max(h["layer"] for h in d["heads"])
    H = 1 + max(h["head"] for h in d["heads"])
    ex = np.full((L, H), np.nan)
    gr = np.full((L, H), np.nan)
    for h in d["heads"]:
        ex[h["layer"], h["head"]] = h["exact_delta"]
        if h["gradient"] is not None:
            gr[h["layer"], h["head"]] = h["gradient"]
    arrays = {"exact (single-head ablation)": ex}
    if np.isfinite(gr).any():
        arrays["gradient (|dL/dgate|)"] = gr
    path = figures.head_heatmaps(arrays, None, f"{d['model']}: head importance ({d['metric']})",
                                 figdir / f"{tag}-importance.png",
                                 units={"exact (single-head ablation)": f"change in {d['metric']}",
                                        "gradient (|dL/dgate|)": "normalised per layer"})
    top = sorted(d["heads"], key=lambda h: -h["exact_delta"])[:8]
    lines = [
        f"Model **{d['model']}**, metric {d['metric']} (base {fmt(d['base'])}), {d['n_tokens']} tokens. "
        f"Spearman exact vs gradient: {fmt(d['spearman_exact_vs_gradient'])}.",
        "",
        img(path, figdir, "importance"),
        "",
        "Most important heads (exact): " + ", ".join(f"{h['name']} ({h['exact_delta']:+.4f})" for h in top) + ".",
    ]
    return Section(f"Head importance — {d['model']}", "\n".join(lines), [path])


@section("pruning", PruneResult, 60)
def prune_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = PruneResult.read(folder)
    figs = [copy_figure(folder / "prune.png", figdir, tag)] if (folder / "prune.png").exists() else []
    lines = [
        f"Model **{d['model']}**, metric {d['metric']}, {d['n_heads']} heads; curves: {', '.join(d['curves'])}; "
        f"heads never pruned: {', '.join(d['kept']) or 'none'}.",
        "",
    ] + [img(f, figdir, "pruning") for f in figs]
    return Section(f"Pruning — {d['model']}", "\n".join(lines), figs)
