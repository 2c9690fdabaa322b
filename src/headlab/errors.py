"""User-facing errors.

A :class:`HeadlabError` carries one line that says what went wrong and what to do. The CLI prints it on
stderr without a traceback; library callers can catch it like any exception. One message serves both
callers: it is written with flags (``--max-samples``), and a Python twin decorated with :func:`in_callers_words`
names the keyword instead (``max_samples=``).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import re
from typing import Any, Callable, Iterator


class HeadlabError(Exception):
    """An error caused by the user's input or environment, with a one-line remedy."""


#: set while the command line runs a command: its messages name options as flags
_FROM_CLI: "contextvars.ContextVar[bool]" = contextvars.ContextVar("headlab_from_cli", default=False)
#: flags whose keyword is not their spelling with underscores
KEYWORD_OF = {"filter": "target_filter"}


@contextlib.contextmanager
def from_cli() -> Iterator[None]:
    token = _FROM_CLI.set(True)
    try:
        yield
    finally:
        _FROM_CLI.reset(token)


def in_python_words(message: str, params: Any) -> str:
    """``message`` with each ``--flag`` of a parameter of the called twin named as its keyword (``--max-samples
    -3: ...`` becomes ``max_samples=-3: ...``; ``pass --overwrite (overwrite=True)`` becomes ``pass
    overwrite=True``); flags of no parameter stay as they are."""
    def keyword(flag: str) -> str | None:
        kw = KEYWORD_OF.get(flag, flag.replace("-", "_"))
        return kw if kw in params else None

    def both(m: re.Match[str]) -> str:
        return m.group(2) if keyword(m.group(1)) else m.group(0)

    def valued(m: re.Match[str]) -> str:
        kw = keyword(m.group(1))
        return f"{kw}={m.group(2)}:" if kw else m.group(0)

    def bare(m: re.Match[str]) -> str:
        kw = keyword(m.group(1))
        return f"{kw}=" if kw else m.group(0)

    message = re.sub(r"--([a-z][\w-]*) \((\w+=[^)]*)\)", both, message)
    message = re.sub(r"--([a-z][\w-]*) ([^\s:]+):", valued, message)
    return re.sub(r"--([a-z][\w-]*)", bare, message)


def in_callers_words(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a Python twin: its refusals name options as keywords when Python called it, as flags when the
    command line did (the rules and their messages are shared, written once with flags)."""
    params = inspect.signature(fn).parameters

    @functools.wraps(fn)
    def twin(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HeadlabError as exc:
            if _FROM_CLI.get():
                raise
            raise HeadlabError(in_python_words(str(exc), params)) from exc
    return twin
