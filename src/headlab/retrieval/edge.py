"""The depth law where it can fail: the cells whose outcome the bound t ≥ log3(2D) decides either way.

The bound says L layers solve at most 3^L/2 hops. A table of D_max trained at depths the bound allows can only be
"consistent" with it; these cells can break it or show it reached:

* one layer trained to depth 2 (3^1/2 = 1.5: solving 2 hops breaks the bound);
* two layers trained to depths 4, 5 and 6 (3^2/2 = 4.5: solving 5 breaks it, solving 4 reaches it, where plain
  doubling also allows 4 and one hop more per layer allows 3).

The cells and the plateau are the rule's (:mod:`headlab.rulebook.retrieval`). Each cell is a sweep folder of
dense runs (``results/retrieval/depth_edge/L{L}-D{D}``, one ensemble of seeds); a
run's D_max is read from the per-hop accuracies of its last held-out row and whether its loss had flattened from its
logged losses (:func:`plateaued`), both from ``eval.jsonl``: the files the study commits.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import fmean, variance
from typing import Any, Mapping, Sequence

from headlab.io import read_jsonl
from headlab.result import read_json
from headlab.retrieval.law import d_max
from headlab.rulebook.retrieval import EDGE_CELLS as CELLS
from headlab.rulebook.retrieval import PLATEAU

FOLDER = "depth_edge"


def plateaued(losses: Sequence[float]) -> bool:
    """Whether the loss had flattened: the mean of the last fifth of the logged losses is at most ``PLATEAU`` below
    the mean of the fifth before it, or not below it by three standard errors (a logged loss is one batch's: its
    scatter alone must not read as a decline). Ten logged losses at the least."""
    k = len(losses) // 5
    if k < 2:
        return False
    last, before = losses[-k:], losses[-2 * k:-k]
    drop = fmean(before) - fmean(last)
    return drop <= PLATEAU * fmean(before) or drop <= 3 * math.sqrt((variance(last) + variance(before)) / k)


def run_reading(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One dense run from its held-out rows: D_max at its last row (per-hop accuracy) and whether it flattened."""
    return {"d_max": d_max(rows[-1].get("hops") or {}), "flat": plateaued([r["loss"] for r in rows])}


def cell(layers: int, depth: int, runs: Sequence[Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """A cell's statistics from the held-out rows of each of its runs (seeds)."""
    read = [run_reading(r) for r in runs if r]
    return {"layers": layers, "trained_depth": depth, "bound": 3 ** layers / 2,
            "d_max": [r["d_max"] for r in read], "flat": [r["flat"] for r in read]}


def edge_stats(root: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """The rule's statistics from ``root/depth_edge`` (``root``: results/retrieval) and the files read; ``None``
    when no cell has a finished run. A cell's runs are its finished dense runs (a ``summary.json`` beside their
    ``eval.jsonl``) of its own layer count and depth: a run of another shape in the folder is not counted."""
    cells, files = [], []
    for layers, depth in CELLS:
        runs = []
        for summary in sorted((root / FOLDER / f"L{layers}-D{depth}").glob("*/summary.json")):
            s = read_json(summary)
            if (s["n_layers"], s["task"]["depth"], s["task"]["curriculum"]) != (layers, depth, "dense"):
                continue
            runs.append(read_jsonl(summary.parent / "eval.jsonl"))
            files += [str(summary.parent / "eval.jsonl"), str(summary)]
        if runs:
            cells.append(cell(layers, depth, runs))
    return ({"cells": cells} if cells else None), files
