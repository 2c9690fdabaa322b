"""The rules option values obey, one table shared by every Python twin and the settings objects: a value that
breaks its rule is refused in one line naming the option (as the CLI spells it) before any work starts.

``validate(threshold=..., batch_size=...)`` checks the values it is given against :data:`RULES` by name; a name
without a rule is a programming error, not a user's.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
import math
import os
from dataclasses import dataclass
from typing import Any, Iterator, Literal

from headlab.errors import HeadlabError


@dataclass(frozen=True)
class Rule:
    """``whole``: an integer of at least ``low``; ``share``: a finite number in [0, 1]; ``positive``: a finite
    number above 0; ``number``: any finite number; ``flag``: True or False (a string such as "no" is not False).
    ``optional``: None is allowed (the option's "not set")."""

    kind: Literal["whole", "share", "positive", "number", "flag"]
    low: int = 0
    optional: bool = False
    #: bytes each unit of a count holds in memory at the least (0: it holds none): a count whose items cannot
    #: all fit in the machine's memory is refused before the work, not met by the allocator
    each: int = 0

    def problem(self, flag: str, value: Any) -> str | None:
        if value is None and self.optional:
            return None
        if self.kind == "flag":
            return None if isinstance(value, bool) else f"--{flag} {value!r}: give True or False"
        if self.kind == "whole":
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= self.low
            if not ok:
                return f"--{flag} {value!r}: give a whole number of at least {self.low}"
            have = machine_memory() if self.each else None
            if have and value * self.each > have:
                return (f"--{flag} {value:,}: each one holds at least {self.each:,} bytes, "
                        f"{value * self.each / 2**30:,.0f} GiB in all, more than this machine's "
                        f"{have / 2**30:.0f} GiB; give at most {have // self.each:,}")
            return None
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if self.kind == "number":
            return None if number else f"--{flag} {value!r}: give a number"
        if self.kind == "share":
            return None if number and 0 <= value <= 1 else f"--{flag} {value!r}: give a share between 0 and 1"
        return None if number and value > 0 else f"--{flag} {value!r}: give a number above 0"


def machine_memory() -> int | None:
    """The machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


#: what one generated text, sample or control draw holds at the least in Python objects (its text or token ids,
#: its arrays, a dict of its own): counts of them are bounded by the machine's memory
ITEM_BYTES = 1024
WHOLE, COUNT, SHARE, FLAG = Rule("whole", 0), Rule("whole", 1), Rule("share"), Rule("flag")
ITEMS, DRAWS = Rule("whole", 1, each=ITEM_BYTES), Rule("whole", 0, each=ITEM_BYTES)
RULES: dict[str, Rule] = {
    "threshold": SHARE, "kappa": SHARE, "consecutive": COUNT, "batch_size": COUNT, "n": ITEMS, "top": COUNT,
    "samples": ITEMS, "rope_samples": ITEMS, "draws": DRAWS, "max_offset": WHOLE, "max_length": Rule("whole", 2),
    "max_samples": Rule("whole", 0, optional=True), "stride": Rule("whole", 1, optional=True),
    "checkpoint_every": Rule("whole", 0, optional=True), "seed": WHOLE,
    "chunk_mb": Rule("positive"), "window": Rule("whole", 4), "depth": COUNT, "distractors": WHOLE, "shots": WHOLE,
    "continuation": WHOLE, "words": Rule("whole", 2), "suite_n": ITEMS, "k": COUNT, "per_detector": COUNT,
    "fpr": SHARE, "min_lift": SHARE, "n_layers": COUNT, "n_heads": COUNT, "d_model": COUNT, "steps": COUNT,
    "lr": Rule("positive"), "eval_every": COUNT, "warmup_steps": Rule("whole", 0, optional=True),
    "min_depth": Rule("whole", 1, optional=True), "untied": FLAG, "separator": FLAG, "scan_samples": COUNT,
    "ablate": WHOLE, "min_mass": SHARE, "jobs": COUNT, "eval_n": ITEMS
}


def problems(**values: Any) -> list[str]:
    """One line for every value that breaks its rule."""
    found = []
    for name, value in values.items():
        p = RULES[name].problem(name.replace("_", "-"), value)
        if p is not None:
            found.append(p)
    return found


def validate(**values: Any) -> None:
    """Refuse the first value that breaks its rule (:class:`~headlab.errors.HeadlabError`, one line)."""
    found = problems(**values)
    if found:
        raise HeadlabError(found[0])


def refuse(flag: str, rule: Rule, value: Any) -> None:
    """:func:`validate` for an option whose rule differs from the table's rule of its name (``train``'s optional
    seed, ``sweep``'s checkpoint interval)."""
    found = rule.problem(flag, value)
    if found:
        raise HeadlabError(found)


def items(value: Any) -> Any:
    """A value given where a list is expected, as a list: one string (or path, or model) is one item, not its
    characters; None stays None."""

    if value is None:
        return None
    if isinstance(value, (str, bytes, os.PathLike)) or not hasattr(value, "__iter__"):
        return [value]
    return list(value)


def strings(name: str, value: Any) -> list[str] | None:
    """``value`` as a list of str (one string is one item; any iterable is read once), or one line naming the
    first item that is not a string (bytes, a number, None, a nested list) and its place."""
    if value is None:
        return None
    listed_value = items(value)
    for i, v in enumerate(listed_value):
        if not isinstance(v, str):
            raise HeadlabError(f"{name}[{i}] is {type(v).__name__} {v!r:.40}: {name}= takes strings"
                               + (" (decode bytes first)" if isinstance(v, bytes) else ""))
    return listed_value


#: files that identify what a folder holds (a run's weights, a scan, a tracked run): the first found is hashed
IDENTITY = ("final.safetensors", "model.safetensors", "scan.json", "track/track.json", "summary.json",
            "config.json", "config.toml")
MAX_LISTED = 5000  # files listed for a folder's identity beside that file; a larger folder is cut there


def identity(value: Any) -> tuple[str, str] | None:
    """What makes two items of a pooled list the same evidence: a path that exists is its real path (a symlink
    or another spelling of it) and its content (a copy); None for an item that is not a path on disk."""
    if not isinstance(value, (str, os.PathLike)):
        return None
    path = os.fspath(value)
    if not path or not os.path.exists(path):
        return None
    return os.path.realpath(path), _content(path)


def _content(path: str) -> str:
    h = hashlib.sha256()
    if os.path.isfile(path):
        return _file_digest(path)
    for name in IDENTITY:
        if os.path.isfile(os.path.join(path, name)):
            h.update(name.encode() + _file_digest(os.path.join(path, name)).encode())
            break
    h.update(repr(list(itertools.islice(_listing(path), MAX_LISTED))).encode())
    return h.hexdigest()


def _listing(path: str) -> Iterator[tuple[str, int]]:
    """A folder's files with their sizes, in sorted order, walked only as far as they are read: the first
    ``MAX_LISTED`` of a large tree cost as much as a small one."""
    for d, dirs, fs in os.walk(path):
        dirs.sort()
        for f in sorted(fs):
            full = os.path.join(d, f)
            try:
                size = os.path.getsize(full)
            except OSError:  # a link to nothing is still part of what the folder holds
                size = -1
            yield os.path.relpath(full, path), size


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def repeated(name: str, values: Any, paths: bool = True) -> str | None:
    """One line when a pooled list names the same evidence twice (the same value, the same path by a symlink or
    another spelling, or a copy with the same content), else None: a command that pools runs, seeds, models,
    languages or folders must not count one of them twice. ``paths=False``: the items are values, never files
    (a symbol '.' or '/' is not the folder of that name)."""
    seen: dict[Any, Any] = {}
    for v in items(values) or []:
        ident = identity(v) if paths else None
        keys = [("value", v if isinstance(v, (str, int, float)) else repr(v))]
        if ident is not None:
            keys += [("path", ident[0]), ("content", ident[1])]
        for key in keys:
            if key in seen:
                how = {"value": "twice", "path": f"twice ({v!r} is {seen[key]!r} by another name)",
                       "content": f"twice ({v!r} is a copy of {seen[key]!r})"}[key[0]]
                return f"{name}: {seen[key]!r} is given {how}; give each once (a repeat would count as evidence twice)"
        for key in keys:
            seen[key] = v
    return None


def listed(*names: str) -> Any:
    """Decorate a twin so that its parameters ``names`` go through :func:`items` (its signature is kept) and are
    refused when they name one item twice (:func:`repeated`: these lists pool evidence)."""

    def wrap(fn: Any) -> Any:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def twin(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind_partial(*args, **kwargs)
            for name in names:
                if name in bound.arguments:
                    bound.arguments[name] = items(bound.arguments[name])
                    found = repeated(name, bound.arguments[name])
                    if found:
                        raise HeadlabError(found)
            return fn(*bound.args, **bound.kwargs)
        return twin
    return wrap
