"""Bootstrap confidence intervals over items (templates, windows, prompts), vectorised over heads."""

from __future__ import annotations

import numpy as np

REPS = 1000


def _resample(n: int, reps: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(reps, n))


def mean_ci(x: np.ndarray, reps: int = REPS, seed: int = 0, alpha: float = 0.05
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x`` (n, ...) → mean, lower, upper (percentile bootstrap, NaN-aware) over the first axis."""
    with np.errstate(invalid="ignore"), _quiet():
        mean = np.nanmean(x, 0)
        boots = np.nanmean(x[_resample(len(x), reps, seed)], 1)  # (reps, ...)
        lo, hi = np.nanpercentile(boots, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return mean, lo, hi


def ratio_ci(num: np.ndarray, den: np.ndarray, reps: int = REPS, seed: int = 0, alpha: float = 0.05
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ratio of means of paired items ``num``/``den`` (n, ...), with a paired bootstrap interval."""
    if num.shape != den.shape:
        raise ValueError("paired ratio needs equal shapes")
    idx = _resample(len(num), reps, seed)
    with np.errstate(invalid="ignore", divide="ignore"), _quiet():
        ratio = np.nanmean(num, 0) / np.nanmean(den, 0)
        boots = np.nanmean(num[idx], 1) / np.nanmean(den[idx], 1)
        lo, hi = np.nanpercentile(boots, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return ratio, lo, hi


def curve_cv_ci(x: np.ndarray, reps: int = REPS, seed: int = 0, alpha: float = 0.05
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x`` (n items, G points, ...) → coefficient of variation (std / mean over the G points) of the mean
    curve, with an interval from resampling items."""
    def cv(curve: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nanstd(curve, -x.ndim + 1) / np.nanmean(curve, -x.ndim + 1)

    with _quiet():
        value = cv(np.nanmean(x, 0))
        boots = cv(np.nanmean(x[_resample(len(x), reps, seed)], 1))  # (reps, ...)
        lo, hi = np.nanpercentile(boots, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return value, lo, hi


class _quiet:
    """Silence numpy's 'mean of empty slice' warnings: undefined statistics are NaN by design."""

    def __enter__(self) -> None:
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc: object) -> None:
        self._w.__exit__(*exc)
