"""The report's sections, one per kind of result, each registered beside the result it presents (``section.py`` in
the package that writes it), as the viewer's folder kinds are: ``headlab report`` iterates :data:`SECTIONS` and
holds no per-kind code. A section is found by the file its command writes and returns Markdown plus the figures it
drew; ``rank`` orders the sections in a report (lower first), whatever order their modules were imported in.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

import numpy as np

from headlab.result import Result


@dataclass
class Section:
    title: str
    markdown: str
    figures: list[Path] = field(default_factory=list)
    #: what the section found, in one line, for the report's opening summary ("" where a table says it better)
    finding: str = ""


Builder = Callable[[Path, Path, str], Section]


@dataclass(frozen=True)
class Registered:
    """A result kind's section: its name, the file that identifies it (relative to a folder), its builder and
    its rank in a report."""

    kind: str
    marker: str
    build: Builder
    rank: int


#: every registered section, by its identifying file
SECTIONS: dict[str, Registered] = {}
#: every result kind a section shows: its own, and those it shows as part of it (``parts``)
SHOWN: set[str] = set()


def section(kind: str, result: type[Result], rank: int, under: str = "",
            parts: tuple[type[Result], ...] = ()) -> Callable[[Builder], Builder]:
    """Register the report section of a result kind; its folder holds the result's file (``under`` a
    sub-folder for results a command writes inside a run, e.g. ``track/``); ``parts``: kinds written beside it
    that the section shows too."""
    marker = f"{under}/{result.KIND}" if under else result.KIND
    if marker in SECTIONS:
        raise ValueError(f"a report section for {marker} is already registered")

    def reg(fn: Builder) -> Builder:
        SECTIONS[marker] = Registered(kind, marker, fn, rank)
        SHOWN.update([result.KIND, *(p.KIND for p in parts)])
        return fn
    return reg


def ordered() -> list[Registered]:
    """Every section of every result kind, in report order (every module imported first: a kind registers its
    section when its package is imported)."""
    from headlab.catalog import complete  # deferred: it imports every module, the registrations' own included

    complete()
    return sorted(SECTIONS.values(), key=lambda s: (s.rank, s.marker))


def own_markdown(result: type[Result], folder: Path, figdir: Path, tag: str, title: str,
                 shown: Callable[[Any], Result] = lambda r: r) -> Section:
    """A section of the result's own Markdown (its top heading dropped, its sections one level down) and the
    figures written beside it; ``shown``: the result as the report shows it (a result that keeps verdicts, judged
    again)."""
    text = shown(result.read(folder)).markdown()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# ") and "](" not in line)
    figs = [copy_figure(p, figdir, tag) for p in sorted(folder.glob("*.png"))]
    return Section(title, body.replace("\n## ", "\n### ") + "\n\n" + "\n\n".join(img(f, figdir, f.stem)
                                                                                  for f in figs), figs)


def img(path: Path, figdir: Path, alt: str) -> str:
    # a folder name with spaces, parentheses or quotes would end a Markdown link target early
    alt = alt.replace("[", "(").replace("]", ")")
    return f"![{alt}]({quote(figdir.name)}/{quote(path.name)})"


def copy_figure(src: Path, figdir: Path, tag: str) -> Path:
    dst = figdir / f"{tag}-{src.name}"
    shutil.copyfile(src, dst)
    return dst


def fmt(v: Any, nd: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.{nd}f}"
