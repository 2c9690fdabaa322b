"""The order claim as the retrieval document states it: stacked heads form in a fixed order.

Read pairwise, at the resolution the runs have. Each analyzed run gives every head role (``L<layer>:<label>``, as
:func:`headlab.retrieval.analysis.role_events` names it) the first checkpoint step at which a head of that role
emerged. Within a cell (one recipe, several seeds), every pair of roles that *every* run has is counted: runs where
the first forms before the second, after it, or at the same checkpoint (a tie, never broken by name). The cell's
*concordance* is Σ|before − after| / Σ(before + after) over its pairs (1: every run orders every pair alike; near 0:
no shared order), and its p-value is a permutation test: each run's steps shuffled among its roles (ties move with
their steps), :data:`PERMUTATIONS` times with a fixed seed, p = (1 + #{permuted ≥ observed}) / (1 + permutations).
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from headlab.retrieval.analysis import AnalyzeResult, role_events

PERMUTATIONS = 1999
SEED = 0


def role_steps(analysis: Mapping[str, Any]) -> dict[str, int]:
    """Each role's first emergence step in one analyzed run."""
    out: dict[str, int] = {}
    for role, step in role_events(analysis):
        out[role] = min(step, out.get(role, step))
    return out


def shared_roles(runs: Sequence[Mapping[str, int]]) -> list[str]:
    return sorted(set.intersection(*(set(r) for r in runs))) if runs else []


def pair_counts(runs: Sequence[Mapping[str, int]], roles: Sequence[str]) -> list[dict[str, Any]]:
    """Per pair of ``roles`` (in name order): runs where the first forms before the second, after it, at once."""
    out = []
    for a, b in combinations(roles, 2):
        d = np.sign([r[a] - r[b] for r in runs])
        out.append({"a": a, "b": b, "before": int((d < 0).sum()), "after": int((d > 0).sum()),
                    "ties": int((d == 0).sum())})
    return out


def concordance(steps: np.ndarray) -> float:
    """(runs, roles) steps → Σ|before − after| / Σ(before + after) over the role pairs (NaN: every pair tied)."""
    i, j = np.triu_indices(steps.shape[1], 1)
    d = np.sign(steps[:, i] - steps[:, j])  # (runs, pairs)
    strict = np.abs(d).sum()
    return float(np.abs(d.sum(0)).sum() / strict) if strict else float("nan")


def cell_stats(runs: Sequence[Mapping[str, int]], seed: int = SEED) -> dict[str, Any]:
    """One cell's shared roles, pair counts, concordance and its permutation p-value."""
    roles = shared_roles(runs)
    stats: dict[str, Any] = {"runs": len(runs), "roles": roles, "pairs": pair_counts(runs, roles),
                             "concordance": None, "p": None}
    if len(roles) < 2:
        return stats
    steps = np.array([[r[x] for x in roles] for r in runs], dtype=float)
    c = concordance(steps)
    if np.isnan(c):
        return stats
    rng = np.random.default_rng(seed)
    hits = sum(concordance(np.array([rng.permutation(row) for row in steps])) >= c - 1e-12
               for _ in range(PERMUTATIONS))
    return {**stats, "concordance": round(c, 6), "p": (1 + int(hits)) / (1 + PERMUTATIONS)}


def order_cells(root: Path, study: str = "order") -> tuple[dict[str, Any], list[str]]:
    """Per cell folder of ``root/study`` (``<cell>/<run>/analyze/analyze.json``): its statistics; and the files
    read."""
    cells: dict[str, Any] = {}
    files: list[str] = []
    for cell in sorted(p for p in (root / study).glob("*") if p.is_dir()):
        found = sorted(cell.glob("*/analyze/analyze.json"))
        if found:
            cells[cell.name] = cell_stats([role_steps(AnalyzeResult.read(f).to_json()) for f in found])
            files += [str(f) for f in found]
    return cells, files
