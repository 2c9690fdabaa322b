"""Python twins of ``headlab view`` and ``headlab report``: the viewer as an object that shows itself in a
notebook, and the report of a run folder."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Sequence

from headlab.corpus.files import file_documents
from headlab.corpus.records import jsonl_files
from headlab.display import Displayable
from headlab.errors import HeadlabError, in_callers_words
from headlab.integrity import say_unsealed
from headlab.io import claim_file, keep_apart, write_text_atomic, writing, writing_files
from headlab.models.loaded import LoadedModel
from headlab.reporting import Report
from headlab.reporting import report as write_report
from headlab.result import found_in
from headlab.settings import RUN, takes, takes_run
from headlab.viewer import build
from headlab.viewer.page import render
from headlab.viewer.settings import VIEW, ViewSettings
from headlab.views.data import ViewData

#: the inline frame runs the page's scripts but gets an opaque origin: no cookies, no storage, no access to the
#: notebook; the page's own Content-Security-Policy (no request to any host) still applies inside it.
_SANDBOX = "allow-scripts"


class ViewerPage(Displayable):
    """The self-contained offline attention viewer for one source. In a notebook it shows inline (an
    ``<iframe srcdoc>`` holding the same page :meth:`save` writes); ``html`` is the page itself."""

    def __init__(self, data: ViewData, page: str, height: int = 760) -> None:
        self.data = data
        self.html = page
        self.height = height

    def markdown(self) -> str:
        return f"attention viewer: {self.data.title} ({len(self.html) / 1e6:.2f} MB page)\n"

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" sandbox="{_SANDBOX}" '
                f'style="width:100%;height:{self.height}px;border:1px solid #ddd" '
                f'title="{html.escape(self.data.title, quote=True)}"></iframe>')

    def save(self, path: str | Path, overwrite: bool = RUN.overwrite) -> Path:
        """Write the page to ``path`` (an ``.html`` file; an existing file is replaced only with ``overwrite``)."""

        claim_file(path, overwrite)
        return write_text_atomic(path, self.html)


def _texts(text: Sequence[str] | str | None, texts_file: str | Path | None) -> list[tuple[str, str]] | None:
    if isinstance(text, str):
        text = [text]
    texts = [(f"text {i}", t) for i, t in enumerate(text or [])]
    if texts_file and jsonl_files(str(texts_file)):  # records, read as scan reads them (their 'text' field)
        texts += [(d.doc_id.rsplit("/", 1)[-1], t) for d in file_documents(str(texts_file)) for t in d.load()]
        if not texts:
            raise HeadlabError(f"{texts_file} holds no record with a text")
    elif texts_file:
        try:
            lines = Path(texts_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise HeadlabError(f"cannot read {texts_file} as UTF-8 text: {exc}") from None
        texts += [(f"{Path(texts_file).name}:{i + 1}", t) for i, t in enumerate(lines) if t.strip()]
        if not texts:
            raise HeadlabError(f"{texts_file} holds no text")
    return texts or None


@in_callers_words
@takes(ViewSettings)
def view(source: str | Path | LoadedModel, settings: ViewSettings = VIEW, *, text: Sequence[str] | str | None = None,
         texts_file: str | Path | None = None, device: str, progress: bool,
         out: str | Path | None, overwrite: bool) -> ViewerPage:
    """The offline attention viewer of ``source``: a model (name, folder or hub id), a scan folder (its scores
    colour the grid), a training run (a checkpoint slider) or a retrieval run (the labelled circuit). ``text``
    (one or several) or ``texts_file`` (one text a line; a ``.jsonl`` file's records' ``text``, as ``scan`` reads
    them) replace the default texts; ``scale``: sqrt (default;
    diffuse attention stays visible) or linear (smaller files). ``dtype``: the weights' dtype of a model given
    by name (a scan folder's model is loaded in its scan's dtype). With ``out``, writes the page there too.

    Example:

        page = headlab.view("minilm-l6", text="see https://example.org/a/b")
        page             # shown inline in Jupyter; no request leaves the page
        page.save("runs/view.html")
    """

    keep_apart({"--out": out}, {"--texts-file": texts_file})
    if not isinstance(source, LoadedModel) and Path(source).is_dir():
        say_unsealed([Path(source) / kind.KIND for kind in found_in(source)], "view")
    with writing_files([out], overwrite) as (held,):  # claimed and locked before the work, as the command does
        data = build(source, _texts(text, texts_file), device=device, progress=progress, scale=settings.scale,
                     dtype=settings.dtype)
        page = ViewerPage(data, render(data))
        if held is not None:
            page.save(held, overwrite=True)
    return page


@in_callers_words
@takes_run
def report(run: str | Path, *, title: str | None = None, out: str | Path | None,
           overwrite: bool) -> Report:
    """A Markdown and HTML report with PNG figures of every headlab result found in ``run`` (two levels deep),
    written to ``out`` (default RUN/report).

    Example:

        headlab.report("runs/study")      # shows report.md; report.html beside it
    """

    folder = Path(out) if out is not None else Path(run) / "report"
    with writing(folder, ["report.md", "report.html"], overwrite) as o:
        return write_report(run, o, title)
