"""Inner functions take the settings object and the run options their caller was given: a keyword whose name and
default are a settings field's or a run option's says the same default twice, and the two drift apart when one
changes. Found by reading every function's signature in the package."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path

import headlab
from headlab.settings import RunOptions, Settings

ROOT = Path(__file__).resolve().parents[2]


def _settings_defaults() -> dict[str, set[str]]:
    """Every settings field's default, and the run options' (but ``out``, whose None means "no output")."""
    for m in pkgutil.walk_packages(headlab.__path__, "headlab."):
        if not m.name.endswith("__main__"):
            importlib.import_module(m.name)
    out: dict[str, set[str]] = {f.name: {repr(f.default)} for f in dataclasses.fields(RunOptions) if f.name != "out"}
    todo = list(Settings.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out.setdefault(f.name, set()).add(repr(f.default))
    return out


def _rule_code() -> set[str]:
    """``path:function`` of every function a rule of the book computes its statistics with: its defaults are the
    rule's declaration (a bootstrap's seed), fixed before its data and fingerprinted, so they must not follow a
    run setting that happens to share a name."""
    from headlab.rulebook import BOOK
    from headlab.rulebook.book import resolve

    out = set()
    for rule in BOOK.values():
        for name in rule.computed_by:
            fn = resolve(name)
            path = Path(inspect.getsourcefile(fn)).resolve().relative_to(ROOT / "src").as_posix()
            out.add(f"{path}:{fn.__name__}")
    return out


def respelled() -> set[str]:
    """``path:function(keyword=default)`` for every keyword default that repeats a settings field's, outside the
    rules' own code."""
    fields, rules = _settings_defaults(), _rule_code()
    hits = set()
    for path in sorted((ROOT / "src" / "headlab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if f"{path.relative_to(ROOT / 'src').as_posix()}:{node.name}" in rules:
                continue
            a = node.args
            pos = a.posonlyargs + a.args
            pairs = [*zip(pos[len(pos) - len(a.defaults):], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]
            for arg, default in pairs:
                if default is None or arg.arg not in fields:
                    continue
                try:
                    value = repr(ast.literal_eval(default))
                except ValueError:
                    continue
                if value == "None":  # "not given", not a value of its own that could drift from the field's
                    continue
                if value in fields[arg.arg]:
                    hits.add(f"{path.relative_to(ROOT / 'src').as_posix()}:{node.name}({arg.arg}={value})")
    return hits


def test_no_inner_function_respells_a_settings_default() -> None:
    found = respelled()
    assert not found, ("take the settings object (or the run options) instead of re-spelling its default",
                       sorted(found))
