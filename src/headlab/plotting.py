"""matplotlib for files, never a window: the one place the non-interactive backend is chosen."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (figures are written to files; no display is needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
