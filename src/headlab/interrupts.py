"""Interrupts: SIGTERM is handled like Ctrl-C, so a killed scan or run keeps its finished work.

Python turns SIGINT into ``KeyboardInterrupt`` wherever the program is; :func:`sigterm_as_interrupt` makes
SIGTERM raise :class:`Terminated` (a ``KeyboardInterrupt``) the same way, so every ``except KeyboardInterrupt``
that saves partial results serves both. Exit codes follow the shell's convention: 130 after SIGINT, 143 after
SIGTERM.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator


class Terminated(KeyboardInterrupt):
    """Raised where the program is when SIGTERM arrives (inside :func:`sigterm_as_interrupt`)."""


def exit_code(exc: BaseException | None) -> int:
    return 143 if isinstance(exc, Terminated) else 130


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Raise :class:`Terminated` on SIGTERM for the duration of the block (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_signum: int, _frame: Any) -> None:
        raise Terminated("terminated (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
