"""``headlab view``: one self-contained, offline HTML page to explore a model's or a run's attention heads.

:func:`view` builds the page's data from a model name or path, a scan folder (``scan.json``), a claims study
(its first model's scan), a training run (checkpoints; ``headlab track`` output when present) or a retrieval run
(``task.json``), and writes the file.
See :mod:`headlab.viewer.page` for the file format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from headlab.errors import HeadlabError
from headlab.models.loaded import LoadedModel
from headlab.settings import RUN
from headlab.viewer.codec import SCALES, dequantize, quantize
from headlab.viewer.data import ViewData, ViewSample
from headlab.viewer.page import render, write_html
from headlab.viewer.settings import VIEW
from headlab.viewer.sources import Shown, from_model, from_retrieval, from_scan, from_training, kind_of, source_of


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


__all__ = ["ViewData", "ViewSample", "build", "dequantize", "from_model", "from_retrieval", "from_scan",
           "from_training", "kind_of", "quantize", "render", "view", "write_html"]
