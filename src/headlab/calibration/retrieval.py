"""Controls of the retrieval rules. Their statistics are gathered from run folders (depth-law sweeps, summaries,
analyses), so a control draws each run's outcome (the depth it solves, whether it learns, when each hop is solved,
the order its head roles emerge in) and counts them as the gathering code does: level ``statistics``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from headlab.calibration import Control, Stats, control
from headlab.rulebook.retrieval import MIN_ORDER_RUNS, MIN_SEEDS

LAYERS = (1, 2, 3)
TRAINED = 16  # the deepest lookup trained: above every bound the law gives these layer counts


def _cells(rng: np.random.Generator, per_layer: dict[int, float]) -> Stats:
    """D_max per seed at each layer count: the expected depth, less a hop in one run of four (an unlucky seed)."""
    return {"cells": [{"layers": L, "d_max": [int(per_layer[L] - (rng.random() < 0.25)) for _ in range(MIN_SEEDS)],
                       "bound": 3 ** L / 2, "trained_depth": TRAINED} for L in LAYERS]}


def _law(rng: np.random.Generator, planted: bool) -> Stats:
    """The law: D_max = floor(3^L / 2) (1, 4, 13); its null, more hops than the bound allows at one layer count."""
    return _cells(rng, {1: 1, 2: 4, 3: 13} if planted else {1: 2, 2: 4, 3: 6})


def _rate(rng: np.random.Generator, planted: bool) -> Stats:
    """x3 hops per layer (1, 4, 13) against one hop more per layer (2, 3, 4)."""
    return _cells(rng, {1: 1, 2: 4, 3: 13} if planted else {1: 2, 2: 3, 3: 4})


def _curriculum(rng: np.random.Generator, planted: bool, runs: int) -> Stats:
    implicit, answer = (0.95, 0.0) if planted else (0.5, 0.5)
    return {"implicit": [int(rng.binomial(runs, implicit)), runs], "answer_only": [int(rng.binomial(runs, answer)),
                                                                                   runs]}


def _hops(rng: np.random.Generator, planted: bool) -> Stats:
    """Runs solving four hops: in order (each hop later than the one before) in 95% of runs, or hops solved at
    independent times (in order one time in 24)."""
    in_order = sum(rng.random() < 0.95 if planted else (lambda t: bool(np.all(np.diff(t) > 0)))(rng.random(4))
                   for _ in range(MIN_ORDER_RUNS))
    return {"in_order": int(in_order), "runs": MIN_ORDER_RUNS, "excluded": {}}


ROLES = ("L0 ref→prev", "L0 query→prev", "L1 ref→def-ref", "L1 query→def-ref")


def _order(rng: np.random.Generator, planted: bool) -> Stats:
    """Two cells of three runs: every run's roles emerge in one order, or in a random order each."""
    cells = {}
    for cell in ("L2-D2", "L3-D4"):
        orders = [ROLES if planted else tuple(rng.permutation(ROLES)) for _ in range(MIN_SEEDS)]
        cells[cell] = [Counter(orders).most_common(1)[0][1], len(orders)]
    return {"cells": cells}


LAW = f"{MIN_SEEDS} seeds at 1, 2 and 3 layers, trained to depth {TRAINED}"
for rid, planted, null, evidence, effect, nothing in (
    ("retrieval.depth-bound", lambda r: _law(r, True), lambda r: _law(r, False), LAW,
     "D_max 1, 4, 13 (3^L/2), a seed in four one hop short", "2 hops at one layer, above 3^1/2"),
    ("retrieval.depth-rate", lambda r: _rate(r, True), lambda r: _rate(r, False), LAW, "D_max 1, 4, 13 (x3)",
     "D_max 2, 3, 4 (+1)"),
    ("retrieval.curriculum", lambda r: _curriculum(r, True, 6), lambda r: _curriculum(r, False, 6),
     "6 runs per arm", "implicit learns in 95% of runs, answer-only never", "both learn half the time"),
    ("retrieval.curriculum-hops", lambda r: _curriculum(r, True, 6), lambda r: _curriculum(r, False, 6),
     "6 runs per arm", "implicit solves hop 2 in 95% of runs, answer-only never", "both half the time"),
    ("retrieval.hop-order", lambda r: _hops(r, True), lambda r: _hops(r, False),
     f"{MIN_ORDER_RUNS} runs solving four hops", "hops in order in 95% of runs", "hops at independent times"),
    ("retrieval.head-order", lambda r: _order(r, True), lambda r: _order(r, False),
     f"2 cells of {MIN_SEEDS} runs, 4 roles", "one order in every run", "a random order per run"),
):
    control(Control(rid, evidence, effect, nothing, planted, null, "statistics", 500))
