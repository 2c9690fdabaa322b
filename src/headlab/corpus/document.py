"""A corpus document: an id and a lazy loader of its texts (so a large corpus is read only as far as needed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Document:
    doc_id: str
    load: Callable[[], list[str]]  # one or more texts; each text is windowed on its own, never packed
