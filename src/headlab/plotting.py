"""matplotlib for files, never a window: the one place the non-interactive backend is chosen."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (figures are written to files; no display is needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> None:
    """Write ``fig`` to ``path`` through a temporary file (a reader never sees half a PNG) and close it."""
    plt = pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
