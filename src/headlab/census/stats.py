"""Streaming per-head statistics: memory is O(L·H·C), whatever the number of samples."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest, rankdata

#: a share or statistic with its interval: value, lower, upper
Interval = tuple[float, float, float]


class RunningMoments:
    """Mean, standard deviation and count of per-sample scores of shape ``shape``, NaN-aware.

    ``update`` takes a block ``(N, *shape)``; NaN entries (undefined scores) are skipped element-wise.
    """

    def __init__(self, shape: tuple[int, ...], threshold: float | None = None):
        self.n = np.zeros(shape, dtype=np.int64)
        self.sum = np.zeros(shape, dtype=np.float64)
        self.sumsq = np.zeros(shape, dtype=np.float64)
        self.threshold = threshold
        self.above = np.zeros(shape, dtype=np.int64)

    def update(self, block: np.ndarray) -> None:
        block = np.asarray(block, dtype=np.float64)
        ok = ~np.isnan(block)
        vals = np.where(ok, block, 0.0)
        self.n += ok.sum(0)
        self.sum += vals.sum(0)
        self.sumsq += (vals * vals).sum(0)
        if self.threshold is not None:
            self.above += (ok & (vals > self.threshold)).sum(0)

    @property
    def mean(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 0, self.sum / np.maximum(self.n, 1), np.nan)

    @property
    def std(self) -> np.ndarray:
        """Population standard deviation (ddof=0); NaN where no sample is defined."""
        with np.errstate(invalid="ignore", divide="ignore"):
            var = self.sumsq / np.maximum(self.n, 1) - self.mean ** 2
        return np.where(self.n > 0, np.sqrt(np.clip(var, 0.0, None)), np.nan)

    @property
    def frac_above(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 0, self.above / np.maximum(self.n, 1), np.nan)


@dataclass(frozen=True)
class SdhRule:
    """The strict slash-dominance rule's parameters: a head passes when its `/` mass exceeds ``threshold`` (θ) in
    ``consecutive`` (k) consecutive samples that hold a `/` (the seed document's rule)."""

    threshold: float = 0.5
    consecutive: int = 3


#: the rule as the seed document states it; every default of θ and k is read from here
SDH = SdhRule()


class ConsecutiveRule:
    """The slash-dominance rule: a head passes when its score exceeds ``threshold`` in ``k`` consecutive
    defined samples (samples whose score is NaN, e.g. without the target, are not part of the sequence).

    Samples must arrive in their seeded order; memory is two integers per head.
    """

    def __init__(self, shape: tuple[int, ...], threshold: float = SDH.threshold, k: int = SDH.consecutive):
        if k < 1:
            raise ValueError("k must be at least 1")
        self.threshold, self.k = threshold, k
        self.run = np.zeros(shape, dtype=np.int64)
        self.best = np.zeros(shape, dtype=np.int64)

    def update(self, block: np.ndarray) -> None:
        for row in np.asarray(block, dtype=np.float64):
            ok = ~np.isnan(row)
            hit = ok & (np.where(ok, row, 0.0) > self.threshold)
            # a defined sample below threshold breaks the run; an undefined one leaves it as it is
            self.run = np.where(hit, self.run + 1, np.where(ok, 0, self.run))
            np.maximum(self.best, self.run, out=self.best)

    @property
    def passed(self) -> np.ndarray:
        return self.best >= self.k


def wilson(k: int, n: int, level: float = 0.95) -> Interval:
    """Share k/n with its Wilson score interval (scipy's ``binomtest``); NaN when n = 0."""
    if n == 0:
        return (math.nan, math.nan, math.nan)

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return (k / n, float(ci.low), float(ci.high))


def aucs(neg: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """AUROC of each row pair, ``neg`` (..., n) against ``pos`` (..., m), as the Mann-Whitney U over mid-ranks:
    the value sklearn's ``roc_auc_score`` gives (ties count a half), for every bootstrap row in one call, where
    sklearn's input checks cost ~9 ms a call (80% of a monitor evaluation's wall time, and of the formation
    prediction's bootstrap)."""
    n, m = neg.shape[-1], pos.shape[-1]
    if not n or not m:
        raise ValueError(f"AUROC needs negatives and positives; got {n} and {m}")
    ranks = rankdata(np.concatenate([neg, pos], axis=-1), axis=-1)
    return (ranks[..., n:].sum(-1) - m * (m + 1) / 2) / (n * m)


def auc(neg: np.ndarray, pos: np.ndarray) -> float:
    """The AUROC of one set of negative scores against one of positive scores (:func:`aucs`)."""
    return float(aucs(np.asarray(neg, dtype=np.float64)[None], np.asarray(pos, dtype=np.float64)[None])[0])
