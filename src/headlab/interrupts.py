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


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then raise what arrived (``KeyboardInterrupt`` or
    :class:`Terminated`): a block that must not stop half-way (an optimizer step that updates the weights and its
    moments together, and the count of steps applied) runs whole, so what is saved on an interrupt is one state.
    Main thread only; elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def hold(signum: int, _frame: Any) -> None:
        arrived.append(signum)

    before = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)
    if arrived:
        first = signal.Signals(arrived[0])
        handler = before[first]
        if callable(handler):  # what the signal would have done outside the block (raise, as a rule)
            handler(first, None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(first)
