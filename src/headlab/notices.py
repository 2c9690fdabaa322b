"""What a command skips or repairs (records without text, unreadable files, damaged checkpoints, torn log
lines), said on stderr and kept for the result's own record.

Not Python's ``warnings``: a warnings filter (``PYTHONWARNINGS=ignore``, a notebook's filter) must not be able
to hide lost data. :func:`say` prints through tqdm (so a line never lands inside a progress bar) and adds the
line to every :func:`recorded` block around it, from which a command copies them into its result.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from typing import Iterator

from tqdm import tqdm

_RECORDS: contextvars.ContextVar[tuple[list[str], ...]] = contextvars.ContextVar("headlab_notices", default=())


_REPEAT: contextvars.ContextVar[bool] = contextvars.ContextVar("headlab_notices_repeat", default=False)


def say(message: str) -> None:
    """Tell the user what was skipped or repaired, and record it."""

    if _REPEAT.get():
        return

    tqdm.write(f"headlab: warning: {message}", file=sys.stderr)
    for record in _RECORDS.get():
        record.append(message)


@contextlib.contextmanager
def recorded() -> Iterator[list[str]]:
    """Collect every :func:`say` inside the block (nested blocks each get them)."""
    record: list[str] = []
    token = _RECORDS.set(_RECORDS.get() + (record,))
    try:
        yield record
    finally:
        _RECORDS.reset(token)


@contextlib.contextmanager
def repeated() -> Iterator[None]:
    """A pass that another pass of the same command repeats (checking a corpus before the work, then reading it):
    its notices are said once, by the pass that reads, not twice."""
    token = _REPEAT.set(True)
    try:
        yield
    finally:
        _REPEAT.reset(token)
