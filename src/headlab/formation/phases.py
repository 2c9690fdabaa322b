"""Phases of a score trajectory, and the document's three-stage claim.

Change-point method (ours): a trajectory y over checkpoint steps s is fitted by a continuous-free piecewise
linear function with at most two breakpoints (three segments), each segment fitted by least squares against
log10(step) — checkpoints are log-spaced early, and formation is fast early — choosing the breakpoints (at
checkpoint indices, segments of at least 2 points) that minimize the total squared error; a breakpoint is kept
only if it reduces the error by at least ``min_gain`` of the one-segment error. Each segment is labelled by
its change relative to the trajectory's overall range R = max − min. (Hand-written rather than ``ruptures``: an
exhaustive search over at most two breakpoints of a few dozen checkpoints is the exact optimum in microseconds,
the same optimum ruptures' ``Dynp`` with a linear cost finds, without a dependency.)

* ``flat``: |change| < ``flat_share`` · R, or R < ``min_range`` (nothing forms);
* ``rising`` / ``falling``: the change is positive / negative beyond that;
* a ``flat`` segment after a ``rising`` one is called ``stable``.

The document claims three stages of slash-head formation at 0-10k (noise), 10k-100k (slash-related gradients
grow) and >100k steps (stable). They are compared as the document states them, in absolute steps (the stage test
of the rule book, ``formation.stages``): a run shorter than 100,000 steps cannot show the third stage, and no run
length is assumed to scale them by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

CLAIM_BOUNDARIES = (10_000, 100_000)  # the document's steps


@dataclass
class Phase:
    label: str
    start: int  # step
    end: int    # step
    y0: float
    y1: float

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "start": self.start, "end": self.end, "from": self.y0, "to": self.y1}


class LineCost:
    """The squared error of the least-squares line through the points ``[a, b)``, for any segment in O(1) from
    prefix sums (``a``, ``b`` may be index arrays; 0 for fewer than 2 points). Hand-written rather than one
    ``lstsq`` per segment: the exhaustive search over two breakpoints of 2,000 gradient-signal steps made 2·10⁶
    fits per head and ran for hours; this is the same optimum in a second (a parity test holds it)."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        self._sums = [np.concatenate([[0.0], np.cumsum(v)]) for v in (np.ones_like(x), x, y, x * x, x * y, y * y)]

    def __call__(self, a: Any, b: Any) -> Any:
        n, sx, sy, sxx, sxy, syy = (c[b] - c[a] for c in self._sums)
        with np.errstate(divide="ignore", invalid="ignore"):
            vx, cov, vy = sxx - sx * sx / n, sxy - sx * sy / n, syy - sy * sy / n
            sse = np.where(vx > 0, vy - cov * cov / vx, vy)
        return np.where(n < 2, 0.0, np.maximum(sse, 0.0))


def _fit(x: np.ndarray, y: np.ndarray, min_gain: float) -> list[tuple[int, int]]:
    """Segments as (first index, last index) inclusive: the least squared error with at most two breakpoints
    (segments of at least 2 points), the first such split in index order among equals."""
    n, cost = len(x), LineCost(x, y)
    one = float(cost(0, n))
    best: tuple[float, list[tuple[int, int]]] = (one, [(0, n - 1)])
    if n >= 4:
        i = np.arange(2, n - 1)
        e = cost(0, i) + cost(i, n)
        k = int(np.argmin(e))
        if e[k] < best[0] and one - e[k] >= min_gain * one:
            best = (float(e[k]), [(0, int(i[k]) - 1), (int(i[k]), n - 1)])
    if n >= 6:
        two = best[0]
        i, j = np.arange(2, n - 3)[:, None], np.arange(4, n - 1)[None, :]
        e = np.where(j >= i + 2, cost(0, i) + cost(i, j) + cost(j, n), np.inf)  # (I, J)
        k = int(np.argmin(e))
        bi, bj = int(i[k // e.shape[1], 0]), int(j[0, k % e.shape[1]])
        if e.flat[k] < two and two - e.flat[k] >= min_gain * one:
            best = (float(e.flat[k]), [(0, bi - 1), (bi, bj - 1), (bj, n - 1)])
    return best[1]


def phases(steps: Sequence[int], y: Sequence[float], *, min_gain: float = 0.1, flat_share: float = 0.2,
           min_range: float = 0.05) -> list[Phase]:
    """Split one trajectory into labelled phases (see the module docstring)."""
    s = np.asarray(steps, dtype=float)
    v = np.asarray(y, dtype=float)
    ok = ~np.isnan(v)
    s, v = s[ok], v[ok]
    if len(s) == 0:
        return []
    R = float(v.max() - v.min())
    if R < min_range or len(s) < 3:
        return [Phase("flat", int(s[0]), int(s[-1]), float(v[0]), float(v[-1]))]
    segs = _fit(np.log10(np.maximum(s, 1)), v, min_gain)
    out: list[Phase] = []
    for a, b in segs:
        change = v[b] - v[a]
        label = "flat" if abs(change) < flat_share * R else ("rising" if change > 0 else "falling")
        if label == "flat" and out and out[-1].label in ("rising", "stable"):
            label = "stable"
        out.append(Phase(label, int(s[a]), int(s[b]), float(v[a]), float(v[b])))
    return out


def emergence_step(steps: Sequence[int], y: Sequence[float], threshold: float) -> int | None:
    """First checkpoint step from which the score stays at or above ``threshold`` to the end; None if never."""
    v = np.asarray(y, dtype=float)
    above = np.nan_to_num(v, nan=-np.inf) >= threshold
    if not above[-1]:
        return None
    i = len(v) - 1
    while i > 0 and above[i - 1]:
        i -= 1
    return int(steps[i])
