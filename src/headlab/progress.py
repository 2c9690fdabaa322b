"""Progress bars on stderr for long work (tqdm), or nothing when disabled."""

from __future__ import annotations

import sys
from typing import Any

from tqdm.auto import tqdm


def bar(total: int | None, desc: str, unit: str, enabled: bool = True) -> Any:
    """A tqdm bar on stderr, or None when ``enabled`` is False (callers check for None)."""
    if not enabled:
        return None

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True)
