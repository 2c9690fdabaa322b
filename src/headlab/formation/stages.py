"""The document's three-stage claim as a test: for every head that specializes, how many segments its score
trajectory has against log step, chosen by BIC, and where the boundaries fall in absolute steps.

A trajectory is fitted by 1, 2 and 3 least-squares line segments against log10(step) (segments of at least 2
checkpoints, breakpoints at checkpoints, the exact optimum by exhaustive search as in
:mod:`headlab.formation.phases`); each fit's BIC is ``n ln(SSE / n) + p ln n`` with ``p = 2k + 3(k - 1)``: a
slope and an intercept per segment, and three per breakpoint (ours): a searched breakpoint costs more than one
regular parameter, and at one per breakpoint straight lines and pure noise were split in about one case of
seven (``test_stages.py`` holds the false-split rate under 5%); the fewest segments win ties. A boundary is
the first step of a new segment. The statistics feed the declared rule ``formation.stages``
(:mod:`headlab.rulebook.formation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Sequence

import numpy as np

from headlab.formation.phases import LineCost
from headlab.formation.sdh import Formed
from headlab.formation.track_report import THRESHOLDS
from headlab.formation.tracking import TrackResult
from headlab.rulebook.formation import DOCUMENT_TARGET

MIN_POINTS = 2  # checkpoints per segment
BREAKPOINT_COST = 3  # BIC parameters per searched breakpoint (see the module docstring)


@dataclass(frozen=True)
class Segments:
    """The BIC choice for one trajectory: ``k`` segments starting at ``boundaries`` (steps), and every k's BIC."""

    k: int
    boundaries: tuple[int, ...]
    bic: dict[int, float]


def best_split(x: np.ndarray, y: np.ndarray, k: int) -> tuple[float, tuple[int, ...]]:
    """The least total squared error of ``k`` segments and the indices where segments 2..k start;
    ``(inf, ())`` when the points are too few for ``k`` segments."""
    n, cost = len(x), LineCost(x, y)
    best: tuple[float, tuple[int, ...]] = (math.inf, ())
    for cuts in combinations(range(MIN_POINTS, n - MIN_POINTS + 1), k - 1):
        edges = (0, *cuts, n)
        if any(b - a < MIN_POINTS for a, b in zip(edges, edges[1:])):
            continue
        e = float(sum(cost(a, b) for a, b in zip(edges, edges[1:])))
        if e < best[0]:
            best = (e, tuple(cuts))
    return best


def segments(steps: Sequence[int] | np.ndarray, y: Sequence[float] | np.ndarray, max_k: int = 3) -> Segments:
    """The number of segments of ``y`` against log10(step) by BIC (undefined scores are left out)."""
    s, v = np.asarray(steps, dtype=float), np.asarray(y, dtype=float)
    ok = ~np.isnan(v)
    s, v = s[ok], v[ok]
    x, n = np.log10(np.maximum(s, 1)), len(s)
    scale = max(float(np.var(v)), 1e-12) * 1e-9  # a floor: a perfect fit must not give log(0)
    bic, cuts = {}, {}
    for k in range(1, max_k + 1):
        sse, at = best_split(x, v, k)
        if math.isfinite(sse):
            bic[k] = n * math.log(sse / n + scale) + (2 * k + BREAKPOINT_COST * (k - 1)) * math.log(n)
            cuts[k] = at
    k = min(bic, key=lambda j: (round(bic[j], 9), j))
    return Segments(k, tuple(int(s[i]) for i in cuts[k]), bic)


def specialized(track: TrackResult, only: str | None = None) -> list[tuple[str, int, int]]:
    """(metric, layer, head) of every head whose score reaches the metric's threshold at some checkpoint (of
    metric ``only`` alone, when given)."""
    out = []
    for metric, a in track.scores.items():
        if metric not in THRESHOLDS or (only is not None and metric != only):
            continue
        peak = np.nanmax(np.where(np.isnan(a), -np.inf, a), axis=0)  # (L, H)
        out += [(metric, int(l), int(h)) for l, h in zip(*np.nonzero(peak >= THRESHOLDS[metric]))]
    return out


def formed(tracks: Sequence[TrackResult], metric: str, strict: Sequence[Formed | None] = ()) -> dict[str, Any]:
    """Whether the target formed at all, and each run's highest score reached (what a "no head formed" row
    reports). For the document's target where every run has a strict-rule record (``strict``, beside ``tracks``),
    by the one definition of an SDH (:mod:`headlab.formation.sdh`): runs that end with one (``formed``) and runs
    that had one at some checkpoint (``transient``); otherwise by the tracker's criterion, a head's mean score at
    its threshold at some checkpoint (``definition`` says which)."""
    peaks = [float(np.nanmax(t.scores[metric])) for t in tracks]
    out = {"target": metric, "runs": len(tracks), "top": [round(p, 4) for p in peaks]}
    if metric == DOCUMENT_TARGET and tracks and len(strict) == len(tracks) and None not in strict:
        return {**out, "definition": "strict rule", "formed": sum(f.stable for f in strict if f is not None),
                "transient": sum(f.transient for f in strict if f is not None)}
    return {**out, "definition": "mean score", "formed": sum(p >= THRESHOLDS.get(metric, 0.5) for p in peaks)}


def stage_statistics(tracks: Sequence[TrackResult], metric: str, strict: Sequence[Formed | None] = ()
                     ) -> dict[str, Any]:
    """The statistics ``formation.stages`` judges, on the heads of ``metric`` (the target): seeds, the shortest
    run's last step, the target's specialized heads (over the seeds), how many choose three segments and the
    median first and second boundary of those (None without any); and the declared null, the same fit of every
    other head's ``metric`` score (``null_heads``, ``null_three``): three segments are a stage structure only
    where the specialized heads choose them more often than heads that do not specialize."""
    fits, null = [], []
    for t in tracks:
        spec = {(l, h) for _, l, h in specialized(t, metric)}
        for layer in range(t.n_layers):
            for h in range(t.n_heads):
                (fits if (layer, h) in spec else null).append(segments(t.steps, t.scores[metric][:, layer, h]))
    return {**_summary(fits, len(tracks), min((t.steps[-1] for t in tracks), default=0)), **_null(null),
            **formed(tracks, metric, strict)}


def _null(fits: list[Segments]) -> dict[str, int]:
    return {"null_heads": len(fits), "null_three": sum(f.k == 3 for f in fits)}


def _summary(fits: list[Segments], seeds: int, steps: int) -> dict[str, Any]:
    three = [f.boundaries for f in fits if f.k == 3]
    return {"seeds": seeds, "steps": steps, "heads": len(fits), "three": len(three),
            "by_k": {k: sum(f.k == k for f in fits) for k in (1, 2, 3)},
            "boundaries": [float(np.median([b[i] for b in three])) if three else None for i in (0, 1)]}


def thinned(steps: Sequence[int], points: int = 48) -> np.ndarray:
    """Indices of about ``points`` log-spaced steps among ``steps`` (signals are logged at a fixed interval: an
    exhaustive three-segment search over thousands of rows would weigh the late, stable part most and cost
    minutes; log spacing is the checkpoints' own)."""
    s = np.asarray(steps, dtype=float)
    want = np.logspace(np.log10(max(s[0], 1)), np.log10(s[-1]), points)
    return np.unique(np.searchsorted(s, want).clip(0, len(s) - 1))


def gradient_stage_statistics(runs: Sequence[tuple[Sequence[int], dict[str, np.ndarray]]],
                              tracks: Sequence[TrackResult], metric: str, strict: Sequence[Formed | None] = ()
                              ) -> dict[str, Any]:
    """:func:`stage_statistics` for the slash-gradient share, ``logit_slash / (logit_slash + logit_other)`` of the
    gradient signals (``runs``: each run's signal steps and signals, as
    :func:`headlab.formation.tracking.read_signals` reads them, beside its ``tracks``), at log-spaced signal
    steps: the target's specialized heads (``metric``), against every other head as the null."""
    fits, null = [], []
    for (steps, sig), t in zip(runs, tracks):
        keep = thinned(steps)
        share = sig["logit_slash"] / np.maximum(sig["logit_slash"] + sig["logit_other"], 1e-30)  # (S, L, H)
        at = [int(steps[i]) for i in keep]
        spec = {(l, h) for _, l, h in specialized(t, metric)}
        for layer in range(share.shape[1]):
            for h in range(share.shape[2]):
                (fits if (layer, h) in spec else null).append(segments(at, share[keep, layer, h]))
    return {**_summary(fits, len(runs), min((int(s[-1]) for s, _ in runs), default=0)), **_null(null),
            **formed(tracks, metric, strict)}
