"""Tracking report: phases of every head's trajectories, the claim comparison, and the plots.

Files written next to ``track.json``: ``phases.json``, ``track.md``, ``loss.png``, ``heatmap_<metric>.png``
(heads x checkpoints), ``trajectories_<metric>.png`` (top heads with their phase bands), and for a run with the
head monitor on (``monitor.jsonl``) ``monitor.png`` (each monitored score's highest and median head per row,
warnings marked) with a section of ``track.md`` listing the warnings.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from headlab.errors import HeadlabError
from headlab.formation.head_monitor import read_monitor
from headlab.formation.phases import CLAIM_BOUNDARIES, emergence_step, phases
from headlab.formation.tracking import TrackResult, heatmap_figure, read_signals
from headlab.head import Head
from headlab.head import name as head_name
from headlab.io import read_jsonl, write_text_atomic
from headlab.plotting import pyplot, save_figure
from headlab.result import Result
from headlab.training.config import load_config


@dataclass
class PhasesResult(Result):
    """A tracked run's phases (``track/phases.json``): per metric and head, its change-point phases, emergence
    and rise (:func:`all_phases`); the same for the slash-gradient share; the run's length, and the document's
    stage boundaries (absolute steps; ``claim_boundaries_scaled``: what files written before held, scaled by an
    assumed run length)."""

    KIND: ClassVar[str] = "phases.json"
    scores: dict[str, dict[str, Any]]
    total_steps: int | None = None
    claim_boundaries: list[int] | None = None
    claim_boundaries_scaled: list[float] | None = None
    slash_gradient_share: dict[str, Any] | None = None


PLOTTED = ("slash_mass", "previous-token", "induction", "offset", "sink")
THRESHOLDS = {"slash_mass": 0.5, "slash_mass_stimuli": 0.5, "previous-token": 0.4, "induction": 0.4,
              "offset": 0.5, "sink": 0.5}  # ours: a head "has" the pattern at or above these


MIN_RISE = 0.1  # ours: a rise by change points counts when the score grows by at least this much


def rise_of(ph: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Change-point emergence: the first rising phase (≥ MIN_RISE) that ends in a stable phase or the run's end."""
    for i, p in enumerate(ph):
        nxt = ph[i + 1] if i + 1 < len(ph) else None
        end_value = nxt["to"] if nxt else p["to"]  # the jump between segments counts as part of the rise
        if p["label"] == "rising" and end_value - p["from"] >= MIN_RISE:
            if nxt is None or nxt["label"] == "stable":
                return {"rise_start": p["start"], "rise_end": p["end"],
                        "stable_from": nxt["start"] if nxt else None, "from": p["from"],
                        "to": nxt["to"] if nxt else p["to"]}
    return None


def all_phases(t: TrackResult) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m, a in t.scores.items():
        if m == "offset_delta":
            continue
        out[m] = {}
        for l in range(t.n_layers):
            for h in range(t.n_heads):
                curve = a[:, l, h].tolist()
                ph = [p.to_json() for p in phases(t.steps, curve)]
                out[m][head_name(l, h)] = {"phases": ph, "final": float(a[-1, l, h]), "rise": rise_of(ph),
                                      "emerged_at": emergence_step(t.steps, curve, THRESHOLDS.get(m, 0.5))}
    return out


def signal_phases(steps: list[int], signals: dict[str, np.ndarray]) -> dict[str, Any]:
    """Phases of the slash-related gradient share log10(logit_slash / logit_other) per head."""
    if not steps or "logit_slash" not in signals:
        return {}
    r = np.log10(np.maximum(signals["logit_slash"], 1e-12) / np.maximum(signals["logit_other"], 1e-12))
    L, H = r.shape[1:]
    return {head_name(l, h): [p.to_json() for p in phases(steps, r[:, l, h], min_range=0.1)]
            for l in range(L) for h in range(H)}


def _reach(total_steps: int) -> str:
    """How far a run of ``total_steps`` gets through the document's stage boundaries, in words."""

    first, second = CLAIM_BOUNDARIES
    if total_steps > second:
        return "(it passes both boundaries)."
    if total_steps == second:
        return "(it ends at the second boundary: the stage after it is not observed)."
    if total_steps > first:
        return "(it passes the first boundary only)."
    return "(it ends before the first boundary)."


def markdown(t: TrackResult, ph: dict[str, Any], sig: dict[str, Any], total_steps: int) -> str:
    lines = [f"# Formation of {t.run}", "",
             f"{len(t.steps)} checkpoints, steps {t.steps[0]}..{t.steps[-1]} of {total_steps}; probes "
             + ", ".join(f"{k} {v}" for k, v in t.probes.items()) + ".", "",
             "## Heads that emerged (score crosses the threshold and stays above it)", "",
             "| metric | threshold (ours) | heads (emerged at step) |", "|---|---|---|"]
    for m, heads in ph.items():
        em = sorted(((v["emerged_at"], k) for k, v in heads.items() if v["emerged_at"] is not None))
        cell = ", ".join(f"{k} ({s})" for s, k in em) or "none"
        lines.append(f"| {m} | {THRESHOLDS.get(m, 0.5)} | {cell} |")
    lines += ["", "## Heads that rose and stabilised (change-point emergence, rise ≥ "
              f"{MIN_RISE}, ours)", "", "| metric | head | rising | stable from | score |", "|---|---|---|---|---|"]
    n_rise = 0
    for m, heads in ph.items():
        for k, v in sorted(heads.items(), key=lambda kv: -(kv[1]["rise"] or {}).get("to", -1)):
            r = v["rise"]
            if r:
                n_rise += 1
                lines.append(f"| {m} | {k} | {r['rise_start']}-{r['rise_end']} | {r['stable_from'] or '-'} | "
                             f"{r['from']:.2f} → {r['to']:.2f} |")
    if not n_rise:
        lines.append("| (none) | | | | |")
    lines += ["", "## Phases of the top head per metric (change points, see docs/formation.md)", ""]
    for m, heads in ph.items():
        k = max(heads, key=lambda x: heads[x]["final"])
        parts = "; ".join(f"{p['label']} {p['start']}-{p['end']} ({p['from']:.2f}→{p['to']:.2f})"
                          for p in heads[k]["phases"])
        lines.append(f"- {m}, head {k} (final {heads[k]['final']:.3f}): {parts}")
    lines += ["", "## The document's three stages", "",
              "Claim: noise 0-10k steps, slash-related gradients growing 10k-100k, stable after 100k, compared in "
              f"absolute steps: this run has {total_steps:,} "
              + _reach(total_steps)
              + " The stage test over seeds: `bench/studies/formation_claims.py` (rule `formation.stages`)."]
    if sig:
        k = max(ph.get("slash_mass", {"0.0": {"final": 0}}), key=lambda x: ph["slash_mass"][x]["final"]) \
            if "slash_mass" in ph else next(iter(sig))
        parts = "; ".join(f"{p['label']} {p['start']}-{p['end']}" for p in sig.get(k, []))
        lines.append(f"Measured: slash-gradient share log10(logit_slash/logit_other) of head {k} (top by final "
                     f"`/` mass): {parts or 'no signal'}.")
    return "\n".join(lines) + "\n"


def plots(t: TrackResult, ph: dict[str, Any], out: Path, loss_rows: list[dict[str, Any]]) -> list[Path]:
    plt = pyplot()

    written = []
    if loss_rows:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([r["step"] for r in loss_rows], [r["loss"] for r in loss_rows], lw=0.8)
        ax.set(xlabel="step", ylabel="training loss (nats/token)", title=f"loss — {Path(t.run).name}", xscale="log")
        fig.tight_layout()
        save_figure(fig, out / "loss.png")
        written.append(out / "loss.png")
    for m in PLOTTED:
        a = t.scores[m]  # (S, L, H)
        save_figure(heatmap_figure(t, m), out / f"heatmap_{m}.png")
        written.append(out / f"heatmap_{m}.png")
        fig, ax = plt.subplots(figsize=(6.5, 3.8))
        top = sorted(ph[m], key=lambda k: -ph[m][k]["final"])[:3]
        colors = {"flat": "#dddddd", "rising": "#ffd9a0", "stable": "#b8e0b8", "falling": "#f4b6b6"}
        for k in top:
            layer, head = Head.parse(k)
            ax.plot(t.steps, a[:, layer, head], marker="o", ms=3, label=f"head {k}")
        for p in ph[m][top[0]]["phases"]:
            ax.axvspan(max(p["start"], 1), max(p["end"], 1), color=colors[p["label"]], alpha=0.5, lw=0)
            ax.text((max(p["start"], 1) * max(p["end"], 1)) ** 0.5, ax.get_ylim()[1], p["label"], ha="center",
                    va="top", fontsize=7)
        ax.set(xscale="log", xlabel="step", ylabel=f"{m} score",
               title=f"{m}: top heads, phases of head {top[0]}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        save_figure(fig, out / f"trajectories_{m}.png")
        written.append(out / f"trajectories_{m}.png")
    return written


def monitor_report(run: Path, out: Path) -> list[str]:
    """``monitor.png`` and the markdown lines of the head monitor's series (nothing for a run without them)."""

    steps, series, said = read_monitor(run)
    if not steps:
        return []
    plt = pyplot()
    fig, axes = plt.subplots(1, len(series), figsize=(2.6 * len(series), 2.8), squeeze=False)
    for ax, (m, a) in zip(axes[0], series.items()):
        flat = a.reshape(len(steps), -1)
        ax.plot(steps, np.nanmax(flat, 1), marker="o", ms=2, label="highest head")
        ax.plot(steps, np.nanmedian(flat, 1), marker="o", ms=2, label="median head")
        for w in said:
            ax.axvline(w["step"], color="tab:red", lw=0.6, alpha=0.6)
        ax.set(title=m, xlabel="step")
    axes[0][0].legend(fontsize=6)
    fig.suptitle("head monitor (probe windows; red: warnings)", fontsize=8)
    fig.tight_layout()
    save_figure(fig, out / "monitor.png")
    lines = ["", "## Head monitor", "", f"{len(steps)} rows (steps {steps[0]}..{steps[-1]}); ![monitor](monitor.png)",
             ""]
    lines += [f"- step {w['step']}, {w['rule']}: {w['message']}" for w in said] or ["No warning."]
    return lines


def phases_record(t: TrackResult, run: Path) -> PhasesResult:
    """A tracked run's phases, from its scores, config and gradient signals alone (no checkpoint is read)."""

    sig_steps, sig = read_signals(run)
    return PhasesResult(scores=all_phases(t), total_steps=load_config(run / "config.toml").optim.steps,
                        claim_boundaries=list(CLAIM_BOUNDARIES), slash_gradient_share=signal_phases(sig_steps, sig))


def write_track_text(t: TrackResult, run: Path, out: Path, record: PhasesResult | None = None) -> PhasesResult:
    """Phases and markdown of a tracked run (``record``: its :func:`phases_record`, when already computed): what a
    run tracked by an older headlab can be given again without its checkpoints. Returns the phases record."""

    record = record or phases_record(t, run)
    record.write(out)
    text = markdown(t, record.scores, record.slash_gradient_share or {}, record.total_steps or t.steps[-1])
    write_text_atomic(out / TrackResult.REPORT, text + "\n".join(monitor_report(run, out) + [""]))
    return record


def write_track_report(t: TrackResult, run: Path, out: Path) -> PhasesResult:
    """Phases, markdown and plots for a tracked run; returns the phases record."""

    record = write_track_text(t, run, out)
    rows = read_jsonl(run / "metrics.jsonl") if (run / "metrics.jsonl").exists() else []
    plots(t, ph=record.scores, out=out, loss_rows=rows)
    return record


def specialization_table(arms: dict[str, list[Path]],
                    metrics: tuple[str, ...] = ("previous-token", "induction", "sink", "slash_mass")) -> str:
    """Markdown, one row per arm (tracked runs, one per seed) and metric: per seed the heads that emerged (score
    crosses :data:`THRESHOLDS` and stays above) and the heads that rose (a change-point rise of at least
    :data:`MIN_RISE` that ends stable or at the run's end), the median step at which the heads emerged and,
    apart, the median step at which the rises ended (two different events: a rise that ends stable at the run's
    last checkpoint is not an emergence there), their layers, and per seed the top head's final score. Reads
    each run's ``track/phases.json``."""

    lines = ["| arm | metric | emerged (≥ threshold) per seed | rose (≥ 0.1) per seed | median emergence step | "
             "median end of rise | layers | top final score per seed |", "|---|---|---|---|---|---|---|---|"]
    for arm, runs in arms.items():
        scores = [read_phases(r).scores for r in runs]
        for m in metrics:
            emerged = [{h: v["emerged_at"] for h, v in s[m].items() if v["emerged_at"] is not None} for s in scores]
            rose = [{h: v["rise"]["rise_end"] for h, v in s[m].items() if v["rise"] is not None} for s in scores]
            at = [int(x) for e in emerged for x in e.values()]
            ends = [int(x) for r in rose for x in r.values()]
            layers = sorted({Head.parse(h).layer for e, r in zip(emerged, rose) for h in {**r, **e}})
            tops = [max(v["final"] for v in s[m].values()) for s in scores]
            median = lambda xs: f"{statistics.median(xs):.0f}" if xs else "-"  # noqa: E731
            lines.append(f"| {arm} | {m} (≥ {THRESHOLDS[m]}) | {', '.join(str(len(e)) for e in emerged)} | "
                         f"{', '.join(str(len(r)) for r in rose)} | {median(at)} | {median(ends)} | "
                         f"{', '.join(map(str, layers)) or '-'} | {', '.join(f'{t:.2f}' for t in tops)} |")
    return "\n".join(lines) + "\n"


def read_phases(run: Path) -> PhasesResult:
    path = Path(run) / "track" / PhasesResult.KIND
    if not path.exists():
        raise HeadlabError(f"{path} does not exist; run headlab track {run} first")
    return PhasesResult.read(path)
