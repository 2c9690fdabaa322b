"""The rank AUROC (``headlab.census.stats.aucs``) against scikit-learn's ``roc_auc_score`` on the bootstrap a monitor
evaluation and the formation prediction run: B resamples of n negatives and m positives, one call for every row
against one call per row. Both give the same values (checked here to 1e-12, and in tests/unit); the target is the
time per resample, which was 80% of a monitor evaluation's wall time.

    .venv/bin/python bench/auroc.py [--rows 1000] [--sizes 50x20,300x80,2000x400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sklearn.metrics import roc_auc_score

from headlab.census.stats import aucs


def timed(fn, rounds: int) -> tuple[float, object]:
    took, out = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = fn()
        took.append(time.perf_counter() - t0)
    return statistics.median(took), out


def case(rows: int, n: int, m: int, rounds: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """(sklearn s, rank s, largest difference) for ``rows`` resamples of n negatives and m positives (with ties)."""
    neg = np.round(rng.normal(0.0, 1.0, (rows, n)), 2)
    pos = np.round(rng.normal(0.5, 1.0, (rows, m)), 2)
    labels = np.r_[np.zeros(n), np.ones(m)]
    base, want = timed(lambda: np.array([roc_auc_score(labels, np.r_[a, b]) for a, b in zip(neg, pos)]), rounds)
    ours, got = timed(lambda: aucs(neg, pos), rounds)
    return base, ours, float(np.max(np.abs(np.asarray(want) - np.asarray(got))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--sizes", default="50x20,300x80,2000x400")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print("| negatives x positives | resamples | roc_auc_score per row, s | aucs, s | ratio | largest difference |")
    print("|---|---|---|---|---|---|")
    for size in a.sizes.split(","):
        n, m = (int(x) for x in size.split("x"))
        base, ours, diff = case(a.rows, n, m, a.rounds, rng)
        if diff > 1e-12:
            raise SystemExit(f"{size}: the rank AUROC differs from roc_auc_score by {diff:.3g}")
        print(f"| {n} x {m} | {a.rows} | {base:.3f} | {ours:.3f} | {ours / base:.3f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
