"""Typed results, on one base: every command's result is a :class:`Result` dataclass written to one JSON file in
its folder (``KIND``, e.g. ``scan.json``) and read back from that folder (or from the file itself).

``to_json`` writes heads as ``L.H`` and NaN as null (via :func:`headlab.io.write_json_atomic`), and :meth:`write`
seals the file with the sha256 of its content (:func:`headlab.io.sealed`): :meth:`read` refuses a file whose
content no longer matches it, in one line (a value edited by hand is not read as measured); ``from_json``
checks the keys exactly (a missing or unknown key names the file's kind and the key: a result written by another
headlab version or by hand is refused, not half-read; a field declared with a default may be absent, as in a
file written before it was added) and turns ``L.H`` strings back into :class:`Head`. By
default a result's JSON keys are its fields; a result whose document has another shape (``scan.json``'s per-head
records) declares ``KEYS`` and overrides ``to_json`` and :meth:`Result.decode`. ``write_companions`` adds the
human-readable files beside the JSON (``heads.csv``, ``claims.md``).

Every subclass with a ``KIND`` is registered in :data:`RESULTS` (collisions refused): the report, the viewer and
the comparison find a folder's results there (:func:`found_in`) instead of matching file names. A result also
reads like its JSON document (``r["heads"]``), so templates and reports need no second spelling.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from headlab.catalog import complete
from headlab.display import Displayable, field_table
from headlab.errors import HeadlabError
from headlab.head import Head
from headlab.io import SEAL, sealed, unsealed, write_json_atomic

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

    return np.array(values, dtype=object).astype(float) if values is not None else None


def per_head(heads: list[dict[str, Any]], n_layers: int, n_heads: int, get: Any) -> Any:
    """An ``(L, H, ...)`` float array from a result's per-head records (in layer-major order)."""

    arr = floats([get(h) for h in heads])
    return np.asarray(arr).reshape(n_layers, n_heads, *np.asarray(arr).shape[1:])


#: every result kind, by the file it is written to in its folder
RESULTS: dict[str, type["Result"]] = {}


@dataclasses.dataclass
class Result(Displayable):
    """Base of typed results; subclasses are dataclasses and set ``KIND`` (the file they are written to)."""

    KIND: ClassVar[str] = ""
    #: the JSON document's keys when they are not the dataclass fields (a result with its own ``to_json``)
    KEYS: ClassVar[tuple[str, ...] | None] = None
    #: the files :meth:`write_companions` writes beside ``KIND``
    COMPANIONS: ClassVar[tuple[str, ...]] = ()
    #: keys that files of an earlier version wrote, and the field each is now read into
    RENAMED: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("KIND")
        if kind:
            if kind in RESULTS and _path(RESULTS[kind]) != _path(cls):
                raise ValueError(f"result kind {kind!r} is already registered by {RESULTS[kind].__qualname__}")
            RESULTS[kind] = cls

    def markdown(self) -> str:
        """The fields as a two-column table (results with a richer summary override this)."""
        return field_table(self.KIND, ((f.name, getattr(self, f.name)) for f in dataclasses.fields(self)))

    def to_json(self) -> dict[str, Any]:
        return {f.name: _encode(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def files(cls) -> list[str]:
        """Every file :meth:`write` writes (what a command claims in its output folder)."""
        return [cls.KIND, *cls.COMPANIONS]

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return cls.KEYS if cls.KEYS is not None else tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_json(cls: type[R], d: dict[str, Any]) -> R:
        if not isinstance(d, dict):
            raise HeadlabError(f"{cls.KIND}: expected a JSON object, got {type(d).__name__}")
        d = {cls.RENAMED.get(k, k) if cls.RENAMED.get(k) not in d else k: v for k, v in d.items() if k != SEAL}
        names = cls.keys()
        missing = [n for n in names if n not in d and n not in cls._optional()]
        unknown = [k for k in d if k not in names]
        if missing or unknown:
            said = [f"missing {', '.join(missing)}"] * bool(missing) + [f"unknown {', '.join(unknown)}"] * bool(unknown)
            raise HeadlabError(f"{cls.KIND}: {'; '.join(said)} (written by another headlab version?)")
        try:
            return cls.decode(d)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise HeadlabError(f"{cls.KIND}: a damaged value ({type(exc).__name__}: {exc})") from None

    @classmethod
    def decode(cls: type[R], d: dict[str, Any]) -> R:
        """The result of a document whose keys :meth:`from_json` has checked (the fields, by default)."""
        hints = typing.get_type_hints(cls)
        return cls(**{n: _decode(hints[n], d[n]) for n in cls.keys() if n in d})

    @classmethod
    def _optional(cls) -> set[str]:
        """Fields declared with a default: added after files were written, so a file without them keeps it."""
        if cls.KEYS is not None:
            return set()
        return {f.name for f in dataclasses.fields(cls)
                if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}

    @classmethod
    def read(cls: type[R], where: str | Path) -> R:
        """The result in ``where``: the folder its :meth:`write` wrote, or the JSON file itself."""
        path = Path(where)
        file = path / cls.KIND if path.is_dir() else path
        try:
            return cls.from_json(unsealed(read_json(file), file))
        except HeadlabError as exc:
            raise (exc if str(file) in str(exc) else HeadlabError(f"{file}: {exc}")) from None

    def write(self, folder: str | Path) -> Path:
        """Write ``KIND`` (and the companion files) into ``folder``, each atomically; returns the folder."""

        out = Path(folder)
        if out.suffix == ".json" or (out.exists() and not out.is_dir()):
            raise HeadlabError(f"{out}: a result is written into a folder (its file is {self.KIND}); give the folder")
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out / self.KIND, sealed(self.to_json()))
        self.write_companions(out)
        return out

    def write_companions(self, folder: Path) -> None:
        """Files written beside the JSON (a Markdown summary, a CSV); none by default."""

    def __getitem__(self, key: str) -> Any:
        if key not in {f.name for f in dataclasses.fields(self)}:
            raise KeyError(key)
        return _encode(getattr(self, key))


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def found_in(folder: str | Path) -> list[type[Result]]:
    """The result kinds written in ``folder``, in registration order."""
    complete()  # every kind registers when its module is imported
    p = Path(folder)
    return [cls for kind, cls in RESULTS.items() if (p / kind).is_file()]


def linked_folders(root: str | Path) -> list[Path]:
    """The folders under ``root`` reached through a symbolic link. No reader of results follows one (a link can
    make one result count twice, or bring in a folder from elsewhere); each reader names those it left out."""
    return sorted(p for p in Path(root).rglob("*") if p.is_symlink() and p.is_dir())
