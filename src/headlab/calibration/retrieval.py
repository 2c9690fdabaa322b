"""Controls of the retrieval rules. Their statistics are gathered from run folders (depth-law sweeps, summaries,
analyses), so a control draws each run's outcome (the depth it solves, whether it learns, when each hop is solved,
the order its head roles emerge in) and counts them as the gathering code does: level ``statistics``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from headlab.calibration import Control, Stats, control
from headlab.retrieval import edge, order
from headlab.rulebook.retrieval import MIN_HOP_RUNS, MIN_ORDER_RUNS, MIN_SEEDS, ORDER_CELLS

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


def _hops(rng: np.random.Generator, planted: bool, runs: int = MIN_HOP_RUNS) -> Stats:
    """Runs solving four hops: in order (each hop later than the one before) in 95% of runs, or hops solved at
    independent times (in order one time in 24)."""
    in_order = sum(rng.random() < 0.95 if planted else (lambda t: bool(np.all(np.diff(t) > 0)))(rng.random(4))
                   for _ in range(runs))
    return {"in_order": int(in_order), "runs": runs, "excluded": {}}


ROLES = ("L0 ref→prev", "L0 query→prev", "L1 ref→def-ref", "L1 query→def-ref")


def _order(rng: np.random.Generator, planted: bool) -> Stats:
    """Two cells of three runs: every run's roles emerge in one order, or in a random order each."""
    cells = {}
    for cell in ("L2-D2", "L3-D4"):
        orders = [ROLES if planted else tuple(rng.permutation(ROLES)) for _ in range(MIN_SEEDS)]
        cells[cell] = [Counter(orders).most_common(1)[0][1], len(orders)]
    return {"cells": cells}


def _run(rng: np.random.Generator, depth: int, solves: int, rows: int = 80) -> list[dict]:
    """A dense run's held-out rows: a loss falling to its floor within the first half (noise 0.01), and at the
    last row hops 1..``solves`` at accuracy 0.97-1.00, the rest at 0.5-0.9."""
    t = np.arange(1, rows + 1)
    loss = 0.15 + 0.35 * np.exp(-t / (rows / 8)) + rng.normal(0, 0.01, rows)
    hops = {str(k): float(rng.uniform(0.97, 1.0) if k <= solves else rng.uniform(0.5, 0.9))
            for k in range(1, depth + 1)}
    return [{"step": 250 * int(i), "loss": float(x), **({"hops": hops} if i == rows else {})}
            for i, x in zip(t, loss)]


def _edge(rng: np.random.Generator, planted: bool) -> Stats:
    """The four cells, three seeds each, every run flattened. Planted: the bound reached, each 2-layer seed
    solving 4 hops with probability 1/2 at depth 4 and 1/3 at depths 5 and 6 (3 otherwise), one layer 1 hop. Null:
    one hop more per layer (one layer 1 hop, two layers 2 or 3)."""
    def solves(layers: int, depth: int) -> int:
        if layers == 1:
            return 1
        if planted:
            return 4 if rng.random() < (0.5 if depth == 4 else 1 / 3) else 3
        return int(rng.integers(2, 4))
    return {"cells": [edge.cell(L, D, [_run(rng, D, solves(L, D)) for _ in range(MIN_SEEDS)])
                      for L, D in edge.CELLS]}


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
     f"{MIN_HOP_RUNS} runs solving four hops (the rule's minimum)", "hops in order in 95% of runs",
     "hops at independent times"),
    ("retrieval.head-order", lambda r: _order(r, True), lambda r: _order(r, False),
     f"2 cells of {MIN_SEEDS} runs, 4 roles", "one order in every run", "a random order per run"),
):
    sized: dict[str, Any] = {}
    if rid == "retrieval.hop-order":
        sized = {"at": lambda n: (lambda r: _hops(r, True, n), lambda r: _hops(r, False, n)),
                 "unit": "runs solving four hops", "grid": (5, 6, 8, 10, 12)}
    control(Control(rid, evidence, effect, nothing, planted, null, "statistics", 500, **sized))
# the runs' rows go through the study's own reading (D_max, plateau): level data
control(Control("retrieval.depth-edge", f"{MIN_SEEDS} flattened seeds in each of the four cells (80 logged losses per "
                "run)", "two layers solve 4 hops in half the depth-4 seeds and a third of the others",
                "two layers solve 2 or 3 hops", lambda r: _edge(r, True), lambda r: _edge(r, False), "data", 500))


CHECKPOINT = 250  # the resolution of the order study's emergence steps (its runs checkpoint every 250 steps)


def _pairs(rng: np.random.Generator, planted: bool) -> Stats:
    """Two cells of five runs, four roles. Planted: roles due at 250, 750, 1250 and 1750 steps, each run's steps
    jittered (normal, sd 200) and read at the checkpoint after (ties and the odd reversal arise). Null: each
    role's step drawn afresh per run, uniform over the same checkpoints."""
    cells = {}
    for c in range(ORDER_CELLS):
        runs = []
        for _ in range(MIN_ORDER_RUNS):
            due = np.array([250, 750, 1250, 1750]) + rng.normal(0, 200, 4) if planted else rng.uniform(0, 2000, 4)
            steps = CHECKPOINT * np.ceil(np.clip(due, 1, None) / CHECKPOINT)
            runs.append({role: int(x) for role, x in zip(ROLES, steps)})
        cells[f"cell {c}"] = order.cell_stats(runs, seed=int(rng.integers(2**31)))
    return {"cells": cells}


# the runs' steps go through the study's own reading (shared roles, pair counts, the permutation test): level data;
# left out of the test suite: each draw runs 1,999 permutations per cell
control(Control("retrieval.pair-order", f"{ORDER_CELLS} cells of {MIN_ORDER_RUNS} runs, 4 roles, checkpoints every "
                f"{CHECKPOINT} steps", "one order, each run's steps jittered (sd 200 steps, ties and reversals "
                "arise)", "each role's step drawn afresh per run", lambda r: _pairs(r, True),
                lambda r: _pairs(r, False), "data", 300, ci=False))
