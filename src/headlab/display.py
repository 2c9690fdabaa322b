"""How results show themselves in a notebook: HTML from their Markdown summary, tables as data frames.

A result opts in by inheriting :class:`Displayable` and giving ``markdown()`` (the summary a person reads: top
heads, verdicts, effects with their intervals) and, where a table is natural, ``records()`` (one dict per row).
Jupyter calls ``_repr_html_``; ``to_pandas()`` / ``to_polars()`` build frames from the same rows, so a notebook
and the written files never disagree.
"""

from __future__ import annotations

import dataclasses
import html
import re
from typing import Any

from headlab.errors import HeadlabError

_STYLE = ("<style>.headlab-result table{border-collapse:collapse;font-size:12px}"
          ".headlab-result td,.headlab-result th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
          ".headlab-result pre{font-size:12px}</style>")


#: link and image targets a rendered result may carry; anything else (``javascript:``, ``data:text/html``) is dropped
SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")


def link_allowed(target: str) -> bool:
    """Whether a link or image target is relative or of a safe scheme, read as a browser reads it: character
    references decoded (``javascript&#58;``), and the tabs, newlines and control characters it drops removed."""
    t = target
    for _ in range(3):  # nested references (&amp;#58;) decode one level per pass
        t = html.unescape(t)
    t = re.sub(r"[\x00-\x20\x7f]+", "", t).lower()
    m = _SCHEME.match(t)
    return m is None or m.group(1) in SAFE_SCHEMES


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun in the right number: "1 SDH", "2 SDHs", "0 heads"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def safe_markdown(text: str) -> str:
    """``text`` (Markdown with pipe tables) as HTML, with every raw HTML tag escaped and every link or image whose
    target is not relative or http(s)/mailto dropped: the one escaping rule for everything headlab renders from
    data (model names, corpus text, labels read from result folders someone else may have written)."""
    # deferred: markdown adds 23 modules; only HTML reports need it
    import markdown
    from markdown.treeprocessors import Treeprocessor

    class _Targets(Treeprocessor):
        def run(self, root: Any) -> None:
            for el in root.iter():
                for attr in ("href", "src"):
                    if not link_allowed(el.get(attr) or ""):
                        el.set(attr, "")

    md = markdown.Markdown(extensions=["tables"])
    md.preprocessors.deregister("html_block")  # raw HTML is text, not markup
    md.inlinePatterns.deregister("html")
    md.treeprocessors.register(_Targets(md), "safe-targets", 0)
    return md.convert(text)


def markdown_html(text: str) -> str:
    """``text`` (Markdown with pipe tables) as an HTML fragment for a notebook cell (:func:`safe_markdown`)."""
    return f'{_STYLE}<div class="headlab-result">{safe_markdown(text)}</div>'


def number(x: float, digits: int = 4, signed: bool = False) -> str:
    """``x`` with ``digits`` decimals, or in scientific notation when those decimals would show only zeros
    (an encoder's cosine distances of 2e-6 would print as 0.0000)."""
    sign = "+" if signed else ""
    if x != 0 and abs(x) < 0.5 * 10**-digits:
        return f"{x:{sign}.{max(1, digits - 2)}e}"
    return f"{x:{sign}.{digits}f}"


def short(value: Any, width: int = 60) -> str:
    """``value`` as a repr of at most about ``width`` characters: an array by its shape and dtype, a long container
    by its type and length, anything else cut with an ellipsis."""
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return f"<array {tuple(shape)} {value.dtype}>"
    text = repr(value)
    if len(text) <= width:
        return text
    if isinstance(value, (list, tuple, dict, set)):
        return f"<{type(value).__name__} of {len(value)}>"
    return text[: width - 3] + "..."


def _short_repr(self: Any) -> str:
    if not dataclasses.is_dataclass(self):  # no fields to show: the summary's first line says what it is
        try:
            first = next(iter(self.markdown().strip().splitlines()), "")
        except NotImplementedError:
            return object.__repr__(self)
        return f"<{type(self).__name__}: {first if len(first) <= 100 else first[:97] + '...'}>"
    shown = (f"{f.name}={short(getattr(self, f.name))}" for f in dataclasses.fields(self) if f.repr)
    return f"{type(self).__name__}({', '.join(shown)})"


class Displayable:
    """Mixin: ``_repr_html_`` from ``markdown()``, data frames from ``records()``; ``print()`` shows the Markdown
    summary, and ``repr()`` one short line (arrays by shape, long lists by length: a result can hold megabytes)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # set before @dataclass runs, which never replaces a __repr__ the class itself holds
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = _short_repr  # type: ignore[method-assign]

    def __str__(self) -> str:
        try:
            return self.markdown()
        except NotImplementedError:
            return repr(self)

    def markdown(self) -> str:
        raise NotImplementedError

    def records(self) -> list[dict[str, Any]]:
        raise HeadlabError(f"{type(self).__name__} has no natural table; read its fields instead")

    def _repr_html_(self) -> str:
        return markdown_html(self.markdown())

    def to_pandas(self) -> Any:
        """The rows of :meth:`records` as a ``pandas.DataFrame`` (needs pandas: ``pip install pandas``)."""
        try:
            # deferred: pandas is optional (the notebook extra)
            import pandas as pd
        except ImportError:
            raise HeadlabError("to_pandas needs pandas: pip install pandas") from None
        return pd.DataFrame.from_records(self.records())

    def to_polars(self) -> Any:
        """The rows of :meth:`records` as a ``polars.DataFrame`` (needs polars: ``pip install polars``)."""
        try:
            # deferred: polars is optional
            import polars as pl
        except ImportError:
            raise HeadlabError("to_polars needs polars: pip install polars") from None
        return pl.DataFrame(self.records())


def field_table(title: str, items: Any) -> str:
    """``(name, value)`` pairs as a two-column Markdown table under a bold title: scalars as they are, flat dicts
    as ``key: value`` lists, other containers by their size."""
    lines = [f"**{title}**", "", "| field | value |", "|---|---|"]
    for name, value in items:
        if isinstance(value, (str, int, float, bool)) or value is None:
            lines.append(f"| {name} | {value} |")
        elif isinstance(value, dict) and all(isinstance(x, (str, int, float, bool)) for x in value.values()):
            lines.append(f"| {name} | {', '.join(f'{a}: {b}' for a, b in value.items())} |")
        elif isinstance(value, (list, dict)):
            lines.append(f"| {name} | {type(value).__name__} of {len(value)} |")
        else:
            lines.append(f"| {name} | {value} |")
    return "\n".join(lines) + "\n"


def flat(prefix: str, value: Any) -> dict[str, Any]:
    """Nested dicts as one row: ``{"a": {"b": 1}}`` becomes the column ``a_b``; lists stay one cell."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flat(f"{prefix}_{k}" if prefix else str(k), v))
        return out
    return {prefix: value}
