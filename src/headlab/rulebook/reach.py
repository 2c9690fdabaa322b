"""Everything a rule runs: the headlab functions, classes and module-level constants reachable from its decision and
from the functions that compute its statistics (``Rule.computed_by``), each with a digest of its source or value.

A rule's fingerprint is taken over this closure, so an edit anywhere a rule reaches (a helper its decision calls, a
threshold in a module-level table, a constant another module's function reads) changes it, where the source of the
named functions alone missed them. The closure is found by reading each function's and class's syntax tree and
resolving every name and ``module.attribute`` it uses in its own module's namespace (and its closure cells): static
reading sees the branches that one evaluation would not take. What it cannot resolve (an attribute of a local
object, a method looked up at run time) belongs to a class that is reached through the name that made the object,
or is outside headlab; code outside headlab (numpy, scipy) is pinned by the environment, not here.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import hashlib
import inspect
import re
import textwrap
import types
from pathlib import Path, PurePath
from typing import Any, Iterable

_PACKAGE = "headlab"
_HOME = Path(__file__).resolve().parents[1]  # the package's folder
_CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]*")  # a module-level value that is a constant by its name
#: the rule book's edition, which every rule's own commit bumps: a rule that records it with its verdicts does not
#: change with it
_EDITION = "headlab.rulebook.book.VERSION"
_DEPTH = 6  # how deep a constant's value is written out; deeper parts are written by their type


def _ours(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == _PACKAGE or module.startswith(_PACKAGE + ".")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _name(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def _code(obj: Any) -> Any:
    """The function or class whose source stands for ``obj`` (a bound method's function, a wrapped function's
    original)."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if isinstance(obj, (types.MethodType, staticmethod, classmethod)):
        obj = obj.__func__
    return obj


def canonical(value: Any, found: list[Any], depth: int = 0) -> str:
    """``value`` written so that two runs write it alike (no addresses): functions and classes by name (a headlab
    function is added to ``found``, to be followed), containers and dataclasses by their parts, anything else by its
    type."""
    if depth > _DEPTH:
        return f"<{type(value).__qualname__}>"
    if callable(getattr(value, "__reach__", None)):  # an object that names itself (a rule in the book)
        return str(value.__reach__())
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type, types.MethodType)):
        if _ours(_code(value)) and not isinstance(value, type):  # a table of functions is followed; a registry
            found.append(_code(value))                           # of classes is named, as a class's module is

        return f"<{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', '?')}>"
    if isinstance(value, types.ModuleType):
        return f"<module {value.__name__}>"
    if isinstance(value, PurePath):  # where the checkout lies is no part of a rule
        inside = _HOME in value.parents
        return f"Path({(value.relative_to(_HOME) if inside else PurePath(value.name)).as_posix()!r})"
    if isinstance(value, dict) and value and all(isinstance(v, type) for v in value.values()):
        return "<a registry of classes>"  # filled as modules import and plugins register: each class counts where
        #                                   a rule names it
    if isinstance(value, dict):  # a table's entries from outside headlab (a plugin's, a test's) are not ours
        items = sorted((canonical(k, found, depth + 1), canonical(v, found, depth + 1)) for k, v in value.items()
                       if not (isinstance(v, (type, types.FunctionType)) and not _ours(v)))
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(canonical(v, found, depth + 1) for v in value)) + "}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}(" + ", ".join(canonical(v, found, depth + 1) for v in value) + ")"
    if dataclasses.is_dataclass(value):
        parts = ", ".join(f"{f.name}={canonical(getattr(value, f.name), found, depth + 1)}"
                          for f in dataclasses.fields(value))
        return f"{type(value).__qualname__}({parts})"
    if hasattr(value, "tobytes") and hasattr(value, "dtype"):  # an array: its values
        return f"array({value.dtype}, {getattr(value, 'shape', ())}, {_digest(value.tobytes().hex())})"
    if type(value).__module__ == "re":
        return f"re({value.pattern!r})"
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _namespace(obj: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Where the names in ``obj``'s source resolve: its closure cells, then its module's globals."""
    module = inspect.getmodule(obj)
    globals_ = vars(module) if module is not None else {}
    cells: dict[str, Any] = {}
    code = getattr(obj, "__code__", None)
    if code is not None and getattr(obj, "__closure__", None):
        for name, cell in zip(code.co_freevars, obj.__closure__):
            try:
                cells[name] = cell.cell_contents
            except ValueError:  # a cell not yet filled
                continue
    return cells, globals_


def _chain(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None when the chain does not start at a plain name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _chains(obj: Any) -> Iterable[list[str]]:
    """The dotted names ``obj``'s source uses; a lambda, whose source line need not parse alone, by the names its
    code object (and the code nested in it) loads."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except SyntaxError:
        codes, names = [obj.__code__], set()
        while codes:
            code = codes.pop()
            names.update(code.co_names)
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        yield from ([n] for n in sorted(names))
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and (chain := _chain(node)) is not None:
            yield chain


def _references(obj: Any) -> Iterable[tuple[str, Any]]:
    """Every (dotted name, object) ``obj``'s source names that resolves in its namespace: plain names, and the
    longest resolvable prefix of each ``name.attr...`` chain."""
    cells, globals_ = _namespace(obj)
    module = getattr(inspect.getmodule(obj), "__name__", "?")
    for chain in _chains(obj):
        if chain[0] not in cells.keys() | globals_.keys():
            continue
        value = cells[chain[0]] if chain[0] in cells else globals_[chain[0]]
        where = f"{module}.{chain[0]}"
        for attr in chain[1:]:
            if not isinstance(value, (types.ModuleType, type)) or not hasattr(value, attr):
                break
            owner = value.__name__ if isinstance(value, types.ModuleType) else _name(value)
            value, where = getattr(value, attr), f"{owner}.{attr}"
        yield where, value


def _beside(cls: type, value: Any) -> bool:
    """Whether ``value`` is defined in ``cls``'s own module. A class is followed only into its module: a result
    class's methods also produce and present it (a scan result reaches the whole census), and what produced the data
    is the data's record, not the rule's; what the class needs to be read (its fields, its module's helpers and
    constants) stays in the closure."""
    home = getattr(_code(value), "__module__", None) or getattr(type(value), "__module__", None)
    return home == cls.__module__ or not callable(value)


def _edges(obj: Any) -> tuple[str, dict[str, str], list[Any]]:
    """One function's or class's part of a closure: its digest, the module-level constants it reads (name ->
    digest of their canonical form) and the headlab functions and classes it leads to. A constant is named as one
    (``THRESHOLDS``, ``_BY_TYPE``); a lower-case module-level value is the module's state at run time (a cache, a
    set of what was done), which would move the fingerprint with what the process did."""
    values: dict[str, str] = {}
    follow: list[Any] = []
    for where, value in _references(obj):
        if isinstance(value, types.ModuleType) or (isinstance(obj, type) and not _beside(obj, value)):
            continue
        code = _code(value)
        if isinstance(code, (types.FunctionType, type)):
            follow += [code] if _ours(code) else []
        elif where.startswith(_PACKAGE + ".") and _CONSTANT.fullmatch(where.rsplit(".", 1)[1]) and \
                where != _EDITION and not (callable(value) and not _ours(type(value))):
            values[where] = _digest(canonical(value, follow))
    return _digest(inspect.getsource(obj)), values, follow


def reached(roots: Iterable[Any], memo: dict[int, Any] | None = None) -> dict[str, str]:
    """name -> digest of every headlab function and class (its source) and module-level value (its canonical
    form) reachable from ``roots`` (functions or classes). ``memo`` shares the reading of each object between the
    closures of several rules taken at one time (it holds values as they were when read)."""
    memo = {} if memo is None else memo
    out: dict[str, str] = {}
    todo = [_code(r) for r in roots]
    named = {id(r) for r in todo}  # a root is the rule's own, wherever it is written; what it reaches is headlab's
    seen: set[int] = set()
    while todo:
        obj = todo.pop()
        if id(obj) in seen or not (_ours(obj) or id(obj) in named):
            continue
        seen.add(id(obj))
        if id(obj) not in memo:
            memo[id(obj)] = (obj, _edges(obj))  # the object is kept so that its id is not reused
        digest, values, follow = memo[id(obj)][1]
        out[_name(obj)] = digest
        out.update(values)
        todo += follow
    return dict(sorted(out.items()))


def changed(was: dict[str, str], now: dict[str, str]) -> list[str]:
    """What differs between two closures, as ``name changed`` / ``name added`` / ``name removed``."""
    said = [f"{n} changed" for n in now if n in was and was[n] != now[n]]
    said += [f"{n} added" for n in now if n not in was]
    return said + [f"{n} removed" for n in was if n not in now]


__all__ = ["canonical", "changed", "reached"]
