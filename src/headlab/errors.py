"""User-facing errors.

A :class:`HeadlabError` carries one line that says what went wrong and what to do. The CLI prints it on
stderr without a traceback; library callers can catch it like any exception. One message serves both
callers: it is written with flags (``--max-samples``), and a Python twin decorated with :func:`in_callers_words`
names the keyword instead (``max_samples=``).
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import functools
import inspect
import os
import re
import types
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np


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


def _union(annotation: str) -> list[str]:
    """The top-level members of an annotation's union, as written (``Sequence[str | Path] | None``)."""
    parts, depth, cur = [], 0, ""
    for ch in annotation:
        depth += (ch == "[") - (ch == "]")
        if ch == "|" and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*parts, cur.strip()]


def _expand(members: list[str], names: dict[str, Any]) -> list[str]:
    """Members with a module's union alias (``Model = str | LoadedModel``) replaced by its own members."""

    out = []
    for m in members:
        alias = names.get(m)
        if isinstance(alias, types.UnionType):
            out += ["None" if a is type(None) else getattr(a, "__name__", str(a)) for a in alias.__args__]
        else:
            out.append(m)
    return out


#: the numeric annotations the door checks (numpy's integers and floats count)
_NUMBERS: dict[str, tuple[type, ...]] = {"int": (int, np.integer), "float": (int, float, np.integer, np.floating),
                                         "bool": (bool, np.bool_)}


def _matches(member: str, value: Any, names: dict[str, Any]) -> bool | None:
    """Whether ``value`` fits one union member; None where the member is not one this door checks (``names``:
    the twin's module globals, where a class name is looked up; an alias or unknown name is not checked)."""

    if member == "None":
        return value is None
    if member == "str":  # where a name or a path is asked for, a Path object is as good as its string
        return isinstance(value, (str, os.PathLike))
    if member in ("Path", "os.PathLike[str]"):
        return isinstance(value, os.PathLike)
    if member in _NUMBERS:  # a bool is an int to Python, never a count or a rate to a reader
        is_bool = isinstance(value, (bool, np.bool_))
        return is_bool if member == "bool" else isinstance(value, _NUMBERS[member]) and not is_bool
    if member.startswith("Sequence[") and member.endswith("]"):
        if value is None:
            return False
        inner = _union(member[len("Sequence["):-1])
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            return _fits(inner, value, names)
        return all(_fits(inner, v, names) for v in value) if isinstance(value, (list, tuple)) else True
    cls = names.get(member)
    if isinstance(cls, type) and member != "Any":  # a class the twin's module names: an instance of it
        try:
            return isinstance(value, cls)
        except TypeError:  # a typing construct, not a class
            return None
    return None


def spoken(members: list[str]) -> str:
    """A union's members as a refusal says them: ``True or False`` for bool, not the type's name."""
    words = {"bool": "True or False", "int": "a whole number", "float": "a number"}
    return " or ".join(words.get(m, m) for m in members)


def annotation_problem(annotation: str, value: Any, names: dict[str, Any]) -> str | None:
    """What ``value`` should be (``give ...``) when its annotation (as written; ``names``: the module's globals,
    where its class names are looked up) does not allow it, else None: the one door for twin keywords and
    settings fields alike."""
    members = _expand(_union(annotation), names)
    return None if _fits(members, value, names) else f"give {spoken(members)}"


def _fits(members: list[str], value: Any, names: dict[str, Any]) -> bool:
    got = [_matches(m, value, names) for m in members]
    return any(got) or None in got


#: what a parameter's values look like, where its type alone does not say it
_FORMS = {"heads": " (heads written 'L.H')", "head": " (a head written 'L.H')"}


def type_problem(params: Any, args: tuple[Any, ...], kwargs: dict[str, Any], names: dict[str, Any]
                 ) -> str | None:
    """The first argument of a Python call whose type its annotation (paths, strings, their sequences, headlab
    classes) does not allow, or an empty sequence where one is required, in one line naming the keyword: a
    raw TypeError deep in the work would name neither."""
    sig = inspect.Signature(list(params.values()))
    try:
        bound = sig.bind_partial(*args, **kwargs)
    except TypeError:
        return None
    for name, value in bound.arguments.items():
        ann = params[name].annotation
        if not isinstance(ann, str):
            continue
        members = _expand(_union(ann), names)
        if not _fits(members, value, names):
            seq = next((m for m in members if m.startswith("Sequence[")), None)
            if seq is not None and isinstance(value, (list, tuple)):
                inner = _union(seq[len("Sequence["):-1])
                i, bad = next((i, v) for i, v in enumerate(value) if not _fits(inner, v, names))
                return (f"{name}[{i}] is {type(bad).__name__} {bad!r:.40}: give {spoken(inner)}"
                        + _FORMS.get(name, ""))
            return f"{name}={value!r:.60}: give {spoken(members)}{_FORMS.get(name, '')}"
        required = params[name].default is inspect.Parameter.empty
        if required and any(m.startswith("Sequence[") for m in members) and isinstance(value, (list, tuple)) \
                and not value:
            return f"{name}=[]: give at least one"
    return None


#: the parameters that name what a command writes
OUTPUTS = ("out", "per_sample", "write_filtered", "write_scores")
NAME_MAX = 255  # bytes in one name: ext4, xfs, btrfs, APFS and NTFS alike


def _overlong_output(params: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The line for an output path with a name longer than file systems take: the OS would refuse it only at
    its first touch, as an internal error, after the checks that name the bad option."""
    given = {**dict(zip(params, args)), **kwargs}
    for name in OUTPUTS:
        value = given.get(name)
        if isinstance(value, (str, os.PathLike)):
            long = next((part for part in Path(value).parts if len(os.fsencode(part)) > NAME_MAX), None)
            if long is not None:
                return (f"--{name.replace('_', '-')} {long[:24]}...: a name of {len(os.fsencode(long))} bytes, "
                        f"longer than the {NAME_MAX} file systems take; choose a shorter one")
    return None


def in_callers_words(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a Python twin: its refusals name options as keywords when Python called it, as flags when the
    command line did (the rules and their messages are shared, written once with flags); a Python call's
    arguments of the wrong type are refused at the door (:func:`type_problem`)."""
    params = inspect.signature(fn).parameters
    names = inspect.unwrap(fn).__globals__  # the twin's own module, where its annotations' classes are named

    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    @functools.wraps(fn)
    def twin(*args: Any, **kwargs: Any) -> Any:
        unknown = [] if open_ended else [k for k in kwargs if k not in params]
        if unknown:  # Python's own TypeError would not say which keywords there are
            near = difflib.get_close_matches(unknown[0], list(params), n=1)
            raise HeadlabError(f"{fn.__name__}() takes no keyword {unknown[0]!r}"
                               + (f"; did you mean {near[0]}=?" if near else f"; it takes {', '.join(params)}"))
        if not _FROM_CLI.get() and (problem := type_problem(params, args, kwargs, names)) is not None:
            raise HeadlabError(problem)
        if (problem := _overlong_output(params, args, kwargs)) is not None:
            raise HeadlabError(problem if _FROM_CLI.get() else in_python_words(problem, params))
        try:
            return fn(*args, **kwargs)
        except HeadlabError as exc:
            if _FROM_CLI.get():
                raise
            raise HeadlabError(in_python_words(str(exc), params)) from exc
    return twin


@contextlib.contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """A write's ``OSError`` carries no file name (a full disk fails ``write``, not ``open``): give it ``path``,
    so the one line a user reads names the file it could not write."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
