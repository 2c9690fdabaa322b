"""The folder kinds a viewer page is built from, each registered by the package whose results it reads.

A :class:`FolderSource` says how its folder is recognized (the registered result kinds the folder holds), what it
is in words, and how its view is built from what the folder's results hold: a scan's scores, a tracker's series,
an analysis's labels and per-checkpoint scores. The viewer dispatches through :data:`SOURCES` and never imports
the packages that register them; anything a folder does not hold is said in the page's notes, not measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from headlab.errors import HeadlabError
from headlab.views.data import ViewData


@dataclass(frozen=True)
class Shown:
    """What every source's view is built with: the texts shown instead of its defaults, the device and dtype maps
    are computed in, the progress bar, the maps' quantization (:class:`headlab.viewer.settings.ViewSettings`)."""

    texts: Sequence[tuple[str, str]] | None
    device: str
    progress: bool
    scale: str
    dtype: str


@dataclass(frozen=True)
class FolderSource:
    """One kind of folder a page is built from: its name, what it is in words, how it is recognized, how its view
    is built, and its ``rank`` among the kinds (lower is tried first: a retrieval run is also a training run's
    folder)."""

    kind: str
    describes: str
    recognizes: Callable[[Path], bool]
    build: Callable[[Path, Shown], ViewData]
    rank: int


#: every folder kind a page can be built from, by name
SOURCES: dict[str, FolderSource] = {}


def register_source(source: FolderSource) -> FolderSource:
    """Add a folder kind (refused when its name is taken)."""
    if source.kind in SOURCES:
        raise HeadlabError(f"view source {source.kind!r} is already registered")
    SOURCES[source.kind] = source
    return source


def source_of(source: str | Path) -> FolderSource | None:
    """The folder kind ``source`` is, or None for a model (a name, a hub id or a model directory)."""
    p = Path(source)
    if not p.is_dir():
        return None
    ranked = sorted(SOURCES.values(), key=lambda s: s.rank)
    found = next((s for s in ranked if s.recognizes(p)), None)
    if found is None and not (p / "config.json").exists():
        kinds = ", ".join(s.describes for s in ranked)
        raise HeadlabError(f"{p} holds no run headlab can show: not {kinds}, nor a model (config.json){_instead(p)}")
    return found


def _instead(p: Path) -> str:
    """What to do with a folder the viewer does not draw: its results for ``headlab report``, or the subfolders
    that hold something the viewer shows."""
    from headlab.result import found_in  # deferred: it imports every result kind, needed only on this error

    held = [cls.KIND for cls in found_in(p)]
    out = f"; it holds {', '.join(held)}: headlab report {p} renders that" if held else ""
    shown = sorted(q for q in p.iterdir() if q.is_dir() and any(s.recognizes(q) for s in SOURCES.values()))
    if shown:
        more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        out += f"; view one of its folders: {', '.join(q.name for q in shown[:3])}{more}"
    return out


def kind_of(source: str | Path) -> str:
    found = source_of(source)
    return "model" if found is None else found.kind
