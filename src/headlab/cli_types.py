"""Argument types that check ranges at parse time, and a parser whose errors are one line (exit 2).

``type=at_least(1)`` makes ``--n -3`` fail before any work with ``headlab retrieval generate: error: argument
--n: -3 is below the minimum 1``; argparse names the option, so each type only says what is allowed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, NoReturn


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the message and where to look (usage stays in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def at_least(lo: int) -> Callable[[str], int]:
    """An integer >= ``lo``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum {lo}")
        return value
    parse.__name__ = f"integer >= {lo}"
    return parse


def real_in(lo: float, hi: float | None = None, open_lo: bool = False) -> Callable[[str], float]:
    """A finite number in [lo, hi] (or (lo, hi] with ``open_lo``)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        bad = value != value or value in (float("inf"), float("-inf"))
        if bad or value < lo or (open_lo and value == lo) or (hi is not None and value > hi):
            span = f"{'(' if open_lo else '['}{lo:g}, {'inf)' if hi is None else f'{hi:g}]'}"
            raise argparse.ArgumentTypeError(f"{text} is outside {span}")
        return value
    parse.__name__ = "number"
    return parse
