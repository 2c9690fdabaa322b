"""``headlab view``: one self-contained, offline HTML page to explore a model's or a run's attention heads.

:func:`view` builds the page's data from a model name or path, or from a folder of results: each folder kind is a
:class:`~headlab.views.sources.FolderSource` registered by the package whose results it reads (a scan folder, a
claims study, a training run, a retrieval run), and writes the file. See :mod:`headlab.viewer.page` for the file
format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

# the packages that register their folder kinds
import headlab.formation.view  # noqa: F401
import headlab.retrieval.view  # noqa: F401
import headlab.study.view  # noqa: F401
from headlab.errors import HeadlabError
from headlab.models.loaded import LoadedModel
from headlab.settings import RUN
from headlab.viewer.page import render, write_html
from headlab.viewer.settings import VIEW
from headlab.views.codec import SCALES, dequantize, quantize
from headlab.views.data import ViewData, ViewSample
from headlab.views.model import from_model
from headlab.views.sources import SOURCES, Shown, kind_of, source_of


def build(source: "str | Path | LoadedModel", texts: Sequence[tuple[str, str]] | None = None, *,
          device: str = RUN.device, progress: bool = RUN.progress, scale: str = VIEW.scale,
          dtype: str = RUN.dtype) -> ViewData:
    """The page's data for ``source``; ``texts`` are ``(name, text)`` pairs shown instead of the defaults (not
    used for retrieval runs, whose inputs are task examples); ``scale``: map quantization, ``sqrt`` (default:
    diffuse attention stays visible) or ``linear`` (about 5x smaller files on long inputs); ``dtype``: the
    weights' dtype of a model given by name (a scan folder's model is loaded in its scan's dtype, a training
    run's in its own)."""
    if scale not in SCALES:
        raise HeadlabError(f"unknown scale {scale!r}; known: {', '.join(SCALES)}")
    shown = Shown(texts, device, progress, scale, dtype)
    found = None if isinstance(source, LoadedModel) else source_of(source)  # a LoadedModel: a notebook's model
    if found is not None:
        return found.build(Path(source), shown)  # type: ignore[arg-type]
    return from_model(source if isinstance(source, LoadedModel) else str(source), texts, None, device, progress,
                      scale, dtype)


def view(source: str | Path, out: str | Path, texts: Sequence[tuple[str, str]] | None = None, *,
         device: str = RUN.device, progress: bool = RUN.progress, scale: str = VIEW.scale,
         dtype: str = RUN.dtype) -> Path:
    """Write the viewer page for ``source`` to ``out`` and return its path."""
    return write_html(build(source, texts, device=device, progress=progress, scale=scale, dtype=dtype), out)


__all__ = ["SOURCES", "ViewData", "ViewSample", "build", "dequantize", "kind_of", "quantize", "render", "view",
           "write_html"]
