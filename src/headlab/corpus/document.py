"""A corpus document: an id and a lazy loader of its texts (so a large corpus is read only as far as needed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Document:
    doc_id: str
    load: Callable[[], list[str]]  # one or more texts; each text is windowed on its own, never packed


#: the most bytes of one text (a file, or a JSONL record) a corpus reads: more is cut (text) or skipped (a record,
#: which cannot be parsed in part), and said. A scan of 4,096 windows of 2,048 tokens reads under 64 MiB of one
#: text, so the cap bounds a reader's memory without cutting what a census uses.
MAX_TEXT_BYTES = 64 * 2**20
#: the most bytes of record texts a .gz JSONL keeps in memory (it cannot be read from an offset later)
MAX_ZIPPED_TEXTS = 256 * 2**20
