"""User-facing errors.

A :class:`HeadlabError` carries one line that says what went wrong and what to do. The CLI prints it on
stderr without a traceback; library callers can catch it like any exception.
"""

from __future__ import annotations


class HeadlabError(Exception):
    """An error caused by the user's input or environment, with a one-line remedy."""
