"""Is the flag threshold honest? Thresholds set on the calibration fold at several target false-positive rates,
applied to fresh reference documents (never fitted nor calibrated on): the share flagged should match the target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from headlab.census.stats import wilson
from headlab.monitor.profile import Profile
from headlab.plotting import pyplot, save_figure

TARGETS = (0.005, 0.01, 0.02, 0.05, 0.1)
BAND = (0.005, 0.02)  # the accepted flag rate at the default 1% target


def calibration_curve(prof: Profile, fresh: np.ndarray, figure: Path | None, title: str) -> dict[str, Any]:
    """Flag rate of the ``fresh`` scores at each target of :data:`TARGETS` (Wilson intervals), and at the
    profile's own threshold; with ``figure``, the observed-vs-target plot is written there."""
    cal = np.asarray(prof.calibration_scores)
    rows = []
    for t in TARGETS:
        k = int((fresh > np.quantile(cal, 1.0 - t)).sum())
        _, lo, hi = wilson(k, len(fresh))
        rows.append({"target": t, "flagged": k, "rate": k / max(1, len(fresh)), "interval": [lo, hi]})
    k = int((fresh > prof.threshold).sum())
    _, lo, hi = wilson(k, len(fresh))
    out = {"documents": int(len(fresh)), "calibration_documents": len(cal), "curve": rows,
           "flag_rate_at_fpr": k / max(1, len(fresh)), "interval_at_fpr": [lo, hi],
           "within_band": bool(BAND[0] <= k / max(1, len(fresh)) <= BAND[1]) if abs(prof.fpr - 0.01) < 1e-12 else None}
    if figure is not None:
        _plot(rows, figure, f"{title}: {len(fresh)} fresh documents, thresholds from {len(cal)}")
    return out


def _plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    t = np.array([r["target"] for r in rows])
    rate = np.array([r["rate"] for r in rows])
    lo, hi = np.array([r["interval"] for r in rows]).T
    ax.plot([t.min() / 1.5, t.max() * 1.5], [t.min() / 1.5, t.max() * 1.5], color="0.6", lw=1, ls="--",
            label="observed = target")
    ax.errorbar(t, np.maximum(rate, 1e-4), yerr=[np.maximum(rate, 1e-4) - np.maximum(lo, 1e-4),
                                                  np.maximum(hi, 1e-4) - np.maximum(rate, 1e-4)],
                fmt="o", capsize=3, label="fresh reference (Wilson 95%)")
    ax.axhspan(*BAND, color="tab:green", alpha=0.12, label="accepted at 1%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("target false-positive rate")
    ax.set_ylabel("share of fresh documents flagged")
    ax.set_title(title, fontsize=7)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
