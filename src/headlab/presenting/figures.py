"""Matplotlib figures of the report. Every figure has a title, axis labels and units; PNG at 110 dpi."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from headlab.plotting import color_limits, pyplot, save_figure


def head_heatmaps(arrays: dict[str, np.ndarray], sdh: np.ndarray | None, title: str, path: Path,
                  units: dict[str, str] | None = None) -> Path:
    """One ``(L, H)`` heatmap per score, SDHs boxed in orange. A share (every value in [0, 1]) is drawn on a fixed
    0-1 scale, so a panel whose largest score is 0.01 does not look as vivid as one that reaches 1; other scores
    span their range. Every panel has its colour bar."""
    from matplotlib.ticker import MaxNLocator  # matplotlib loads when a figure is drawn, not with headlab

    plt = pyplot()
    n = len(arrays)
    L, H = next(iter(arrays.values())).shape
    fig, axes = plt.subplots(1, n, figsize=(min(3.2, 0.25 * H + 1.4) * n + 1, 0.22 * L + 1.8), squeeze=False)
    for ax, (name, a) in zip(axes[0], arrays.items()):
        im = ax.imshow(np.ma.masked_invalid(a), origin="lower", aspect="auto", cmap="viridis", **color_limits(a))
        if sdh is not None:
            for l, h in zip(*np.nonzero(sdh)):
                ax.add_patch(plt.Rectangle((h - 0.5, l - 0.5), 1, 1, fill=False, ec="#e65100", lw=1.5))
        ax.set(title=name, xlabel="head", ylabel="layer")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # heads and layers are whole numbers: no 2.5
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        fig.colorbar(im, ax=ax, fraction=0.05, label=(units or {}).get(name, "score (0-1)"))
    fig.suptitle(title + (" (orange: slash-dominance heads)" if sdh is not None and sdh.any() else ""))
    fig.tight_layout()
    save_figure(fig, path)
    return path


def interval_bars(labels: Sequence[str], series: dict[str, Sequence[Sequence[float]]], title: str, ylabel: str,
                  path: Path, hline: float | None = None, hline_label: str = "") -> Path:
    """Grouped bars of ``[value, lower, upper]`` triples with their intervals."""
    plt = pyplot()
    x = np.arange(len(labels))
    w = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.55 * len(labels) + 2), 3.6))
    for k, (name, vals) in enumerate(series.items()):
        v = np.array([t[0] if t[0] is not None else np.nan for t in vals], dtype=float)
        lo = np.array([t[1] if t[1] is not None else np.nan for t in vals], dtype=float)
        hi = np.array([t[2] if t[2] is not None else np.nan for t in vals], dtype=float)
        ax.bar(x + (k - (len(series) - 1) / 2) * w, v, w, label=name,
               yerr=np.nan_to_num(np.vstack([v - lo, hi - v])), capsize=2)
    if hline is not None:
        ax.axhline(hline, color="grey", ls="--", lw=0.8, label=hline_label)
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
    ax.set(title=title, ylabel=ylabel, xlabel="head (layer.head)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
    return path


def curves(x: Sequence[float], ys: dict[str, Sequence[float]], title: str, xlabel: str, ylabel: str,
           path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, y in ys.items():
        ax.plot(x, [np.nan if v is None else v for v in y], marker=".", label=name)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
    return path


def scatter(x: Sequence[float], y: Sequence[float], title: str, xlabel: str, ylabel: str, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 4))
    ax.scatter(x, y, s=12)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    fig.tight_layout()
    save_figure(fig, path)
    return path
