"""Bootstrap confidence intervals over items (templates, windows, prompts), vectorised over heads."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

REPS = 1000


def _counts(n: int, reps: int, seed: int) -> np.ndarray:
    """(reps, n) how often each item is drawn in each bootstrap resample."""
    idx = np.random.default_rng(seed).integers(0, n, size=(reps, n))
    counts = np.zeros((reps, n))
    np.add.at(counts, (np.arange(reps)[:, None], idx), 1.0)
    return counts


def boot_means(x: np.ndarray, reps: int, seed: int) -> np.ndarray:
    """(reps, ...) NaN-aware means of ``x`` (n, ...) over bootstrap resamples of its first axis.

    Computed as a (reps, n) @ (n, m) product of draw counts, so memory is reps·m, not reps·n·m."""
    n = len(x)
    flat = x.reshape(n, -1)
    ok = ~np.isnan(flat)
    c = _counts(n, reps, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((c @ np.where(ok, flat, 0.0)) / (c @ ok)).reshape((reps,) + x.shape[1:])


def mean_ci(x: np.ndarray, reps: int = REPS, *, seed: int, alpha: float = 0.05
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x`` (n, ...) → mean, lower, upper (percentile bootstrap, NaN-aware) over the first axis."""
    with np.errstate(invalid="ignore"), _quiet():
        mean = np.nanmean(x, 0)
        boots = boot_means(x, reps, seed)
        lo, hi = np.nanpercentile(boots, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return mean, lo, hi


def ratio_ci(num: np.ndarray, den: np.ndarray, reps: int = REPS, *, seed: int, alpha: float = 0.05
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ratio of means of paired items ``num``/``den`` (n, ...), with a paired bootstrap interval."""
    if num.shape != den.shape:
        raise ValueError("paired ratio needs equal shapes")
    with np.errstate(invalid="ignore", divide="ignore"), _quiet():
        ratio = np.nanmean(num, 0) / np.nanmean(den, 0)
        boots = boot_means(num, reps, seed) / boot_means(den, reps, seed)  # same seed: paired draws
        lo, hi = np.nanpercentile(boots, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return ratio, lo, hi


def curve_cv_ci(x: np.ndarray, reps: int = REPS, *, seed: int, alpha: float = 0.05
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x`` (n items, G points, ...) → coefficient of variation (std / mean over the G points) of the mean
    curve, with an interval from resampling items."""
    def cv(curve: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nanstd(curve, -x.ndim + 1) / np.nanmean(curve, -x.ndim + 1)

    with _quiet():
        value = cv(np.nanmean(x, 0))
        boots = cv(boot_means(x, reps, seed))  # (reps, G, ...)
        lo, hi = np.nanpercentile(boots, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return value, lo, hi


class _quiet:
    """Silence numpy's 'mean of empty slice' warnings: undefined statistics are NaN by design."""

    def __enter__(self) -> None:

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc: Any) -> None:
        self._w.__exit__(*exc)
