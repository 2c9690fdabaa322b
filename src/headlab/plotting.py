"""matplotlib for files, never a window: the one place the non-interactive backend is chosen.

Figures a result returns (``result.figure()``) are built with :func:`new_figure`, outside pyplot's registry:
a notebook shows the returned figure once, and no figure is left open.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from headlab.errors import naming


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (figures are written to files; no display is needed). Inside a
    Jupyter kernel the notebook's backend is left alone, so the notebook's own plots still show."""
    # deferred: matplotlib takes ~0.6 s to import and only figures need it
    import matplotlib

    if "ipykernel" not in sys.modules:
        matplotlib.use("Agg")
    # deferred: matplotlib takes ~0.6 s to import and only figures need it
    import matplotlib.pyplot as plt

    return plt


def new_figure(**kwargs: Any) -> Any:
    """A ``matplotlib.figure.Figure`` not registered with pyplot (``kwargs`` as for ``Figure``)."""
    # deferred: matplotlib takes ~0.6 s to import and only figures need it
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def save_figure(fig: Any, path: Path) -> None:
    """Write ``fig`` to ``path`` through a temporary file (a reader never sees half a PNG) and close it."""
    plt = pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    try:
        with naming(path):
            fig.savefig(tmp, dpi=110)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        plt.close(fig)


def color_limits(a: np.ndarray) -> dict[str, float]:
    """``vmin``/``vmax`` of a heatmap: 0 and 1 for a share (every finite value in [0, 1]), else its own range."""
    finite = np.asarray(a, dtype=float)[np.isfinite(a)]
    if finite.size == 0 or (finite.min() >= 0 and finite.max() <= 1):
        return {"vmin": 0.0, "vmax": 1.0}
    return {"vmin": float(finite.min()), "vmax": float(finite.max())}
