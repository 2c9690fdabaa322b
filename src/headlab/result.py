"""Typed results: every command's result is a dataclass whose fields are its JSON document's keys.

``to_json`` writes heads as ``L.H`` and NaN as null (via :func:`headlab.io.write_json_atomic`); ``from_json``
checks the keys exactly (a missing or unknown key names the file's kind and the key: a result written by another
headlab version or by hand is refused, not half-read) and turns ``L.H`` strings back into :class:`Head`. A result
also reads like its JSON document (``r["heads"]``), so templates and reports need no second spelling.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any, Callable, ClassVar, TypeVar

from headlab.display import Displayable, field_table
from headlab.errors import HeadlabError
from headlab.head import Head

R = TypeVar("R", bound="Result")


def _encode(value: Any) -> Any:
    if isinstance(value, Head):
        return str(value)
    if isinstance(value, Result):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(hint: Any, value: Any) -> Any:
    """``value`` read from JSON as the field's type ``hint`` (Head and nested results; the rest as read)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Head:
        return Head.parse(value)
    if isinstance(hint, type) and issubclass(hint, Result):
        return hint.from_json(value)
    if origin in (list, tuple) and args and value is not None:
        return [_decode(args[0], v) for v in value]
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        inner = [a for a in args if a is not type(None)]
        return None if value is None else _decode(inner[0], value) if len(inner) == 1 else value
    return value


def read_json(path: str | Path) -> Any:
    """A result file's JSON; an unreadable one is one line naming it."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise HeadlabError(f"cannot read {path}: {exc}") from exc


def floats(values: Any) -> Any:
    """JSON numbers (null for NaN) as a float array."""
    import numpy as np

    return np.array(values, dtype=object).astype(float) if values is not None else None


def per_head(heads: list[dict[str, Any]], n_layers: int, n_heads: int, get: Any) -> Any:
    """An ``(L, H, ...)`` float array from a result's per-head records (in layer-major order)."""
    import numpy as np

    arr = floats([get(h) for h in heads])
    return np.asarray(arr).reshape(n_layers, n_heads, *np.asarray(arr).shape[1:])


@dataclasses.dataclass
class Result(Displayable):
    """Base of typed results; subclasses are dataclasses and set ``KIND`` (the file they are written to)."""

    KIND: ClassVar[str] = "result"

    def markdown(self) -> str:
        """The fields as a two-column table (results with a richer summary override this)."""
        return field_table(self.KIND, ((f.name, getattr(self, f.name)) for f in dataclasses.fields(self)))

    def to_json(self) -> dict[str, Any]:
        return {f.name: _encode(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls: type[R], d: dict[str, Any]) -> R:
        if not isinstance(d, dict):
            raise HeadlabError(f"{cls.KIND}: expected a JSON object, got {type(d).__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if n not in d]
        unknown = [k for k in d if k not in names]
        if missing or unknown:
            said = [f"missing {', '.join(missing)}"] * bool(missing) + [f"unknown {', '.join(unknown)}"] * bool(unknown)
            raise HeadlabError(f"{cls.KIND}: {'; '.join(said)} (written by another headlab version?)")
        hints = typing.get_type_hints(cls)
        return cls(**{n: _decode(hints[n], d[n]) for n in names})

    @classmethod
    def read(cls: type[R], path: str | Path) -> R:
        """The result stored in ``path`` (a JSON file)."""
        return cls.from_json(read_json(path))

    def write(self, path: str | Path) -> Path:
        from headlab.io import write_json_atomic

        return write_json_atomic(path, self.to_json())

    def __getitem__(self, key: str) -> Any:
        if key not in {f.name for f in dataclasses.fields(self)}:
            raise KeyError(key)
        return _encode(getattr(self, key))


@dataclasses.dataclass
class Written(Displayable):
    """What a folder-writing command returns: the folder, its Markdown summary, and the data behind it.

    ``data`` is the command's own value (a list of per-run records, or the JSON document it wrote);
    ``records()`` are its rows where it is a list.
    """

    folder: Path
    summary: str
    data: Any
    figure_of: Callable[[Any], Any] | None = dataclasses.field(default=None, repr=False)

    def markdown(self) -> str:
        return (self.folder / self.summary).read_text(encoding="utf-8")

    def figure(self) -> Any:
        """The command's figure drawn again from ``data`` (a matplotlib figure)."""
        if self.figure_of is None:
            raise HeadlabError(f"{self.summary} has no figure to draw in Python; its PNG files are in {self.folder}")
        return self.figure_of(self.data)

    def records(self) -> list[dict[str, Any]]:
        if not isinstance(self.data, list):
            return super().records()
        return [dataclasses.asdict(x) if dataclasses.is_dataclass(x) and not isinstance(x, type) else dict(x)
                for x in self.data]


@dataclasses.dataclass
class Summary(Displayable):
    """A command's JSON-like outcome (``data``) under a title; shows its scalar entries as a table."""

    title: str
    data: dict[str, Any]

    def markdown(self) -> str:
        return field_table(self.title, self.data.items())

    def __getitem__(self, key: str) -> Any:
        return self.data[key]
