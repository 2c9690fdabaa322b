"""``headlab report RUN --out DIR``: a Markdown and an HTML report, with PNG figures, of every headlab result
found in ``RUN`` and its sub-folders (two levels): scans, characterizations, claims, ablations, importance,
pruning, training/tracking, retrieval sweeps, retrieval circuits and LLM evaluations.

Each kind's section is registered beside the result (:mod:`headlab.presenting.sections`; ``section.py`` in the
package that writes it) and recognised by the file its command writes; this package iterates the registry.
The HTML file is offline: figures are files beside it, the style is inline, nothing is fetched.
"""

from __future__ import annotations

import errno
import html
from dataclasses import dataclass
from pathlib import Path

from headlab.display import Displayable, safe_markdown
from headlab.errors import HeadlabError
from headlab.integrity import say_unsealed
from headlab.io import write_text_atomic
from headlab.notices import say
from headlab.presenting.sections import SHOWN, Section, ordered
from headlab.result import found_in, linked_folders

SKIP_DIRS = {"checkpoints", "tokenizer", "figures", "report", "__pycache__"}

#: no script runs in a report, nothing is fetched: only its own figures and its inline style
CSP = "default-src 'none'; img-src 'self' file: data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
CSS = """body{font:14px/1.5 system-ui,sans-serif;max-width:1100px;margin:20px auto;padding:0 16px;color:#222}
table{border-collapse:collapse;font-size:12px;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 7px}
th{background:#f2f2f2}img{max-width:100%;border:1px solid #eee;margin:6px 0}h2{border-bottom:1px solid #ddd;
padding-bottom:3px;margin-top:32px}code{background:#f4f4f4;padding:0 3px}"""


def _folders(run: Path, out: Path) -> list[Path]:
    found = [run]
    for depth in (1, 2):
        for p in sorted(run.glob("/".join(["*"] * depth))):
            parts = set(p.relative_to(run).parts)
            if p.is_dir() and not parts & SKIP_DIRS and not any(x.startswith(".") for x in parts) \
                    and p.resolve() != out.resolve() and not _through_link(p, run):
                found.append(p)
    return found


def _through_link(p: Path, run: Path) -> bool:
    """Whether ``p`` is reached through a symbolic link below ``run`` (not followed: :func:`linked_folders`)."""
    parts = p.relative_to(run).parts
    return any((run / Path(*parts[:i])).is_symlink() for i in range(1, len(parts) + 1))


def collect(run: str | Path, out: str | Path, skipped: list[str] | None = None) -> list[Section]:
    """Every section found in ``run``, figures drawn into ``out/figures``; a result that cannot be read is left
    out, said, and added to ``skipped`` (the report names it)."""
    run, out = Path(run), Path(out)
    if not run.is_dir():
        raise HeadlabError(f"{run} is not a folder")
    sections_known = ordered()
    found = [(s.kind, folder, s.marker, s.build) for s in sections_known for folder in _folders(run, out)
             if (folder / s.marker).exists()]
    skipped = skipped if skipped is not None else []
    say_unsealed([folder / kind.KIND for folder in _folders(run, out) for kind in found_in(folder)], "report")
    for link in linked_folders(run):
        why = f"{link}: a link to {link.resolve()}, not followed (give that folder itself)"
        skipped.append(why)
        say(f"{why}; left out of the report")
    if not found:
        looked = ", ".join(sorted(s.marker for s in sections_known))
        raise HeadlabError(f"no headlab results in {run} (looked for {looked})")
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    sections: list[Section] = []
    for kind, folder, marker, build in found:
        path = folder / marker
        try:
            sections.append(build(folder, figdir, "-".join(folder.relative_to(run).parts) or run.name))
        except (KeyError, ValueError, TypeError, OSError, HeadlabError) as exc:  # one damaged result does not sink it
            if isinstance(exc, OSError) and _in_writing(exc, out):  # the report's own disk: every section would fail
                raise
            why = f"{path}: not a {kind} result this headlab can read ({type(exc).__name__}: {exc})"
            skipped.append(why)
            say(f"{why}; its section is left out")
    if not sections:
        raise HeadlabError(f"none of the results in {run} could be read ({'; '.join(skipped)})")
    for kind, where in _without_section(run, out).items():
        why = (f"{len(where)} {kind} result(s) ({where[0]}{' and more' if len(where) > 1 else ''}): the report has "
               "no section for this kind; read its own files")
        skipped.append(why)
        say(f"{why}; left out of the report")
    return sections


def _in_writing(exc: OSError, out: Path) -> bool:
    """An error of writing the report (a full or read-only disk, or a file under ``out``), which is not the
    result's fault and would fail every section alike."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG):
        return True
    name = exc.filename or ""
    return bool(name) and Path(name).resolve().is_relative_to(out.resolve())


def _without_section(run: Path, out: Path) -> dict[str, list[str]]:
    """Each result kind found under ``run`` that no section shows, with the folders holding it: left out, and
    said so, never silently."""
    found: dict[str, list[str]] = {}
    for folder in _folders(run, out):
        for kind in found_in(folder):
            if kind.KIND not in SHOWN:
                found.setdefault(kind.KIND, []).append(str(folder / kind.KIND))
    return found


@dataclass
class Report(Displayable):
    """A written report: its folder (``report.md``, ``report.html``, ``figures/``), the titles of its sections,
    how many figures they drew, and the results it found but left out: unreadable, or of a kind it has no section
    for (each with why)."""

    folder: Path
    sections: list[str]
    figures: int
    left_out: list[str]

    @property
    def markdown_file(self) -> Path:
        return self.folder / "report.md"

    @property
    def html_file(self) -> Path:
        return self.folder / "report.html"

    def markdown(self) -> str:
        return self.markdown_file.read_text(encoding="utf-8")


def report(run: str | Path, out: str | Path, title: str | None = None) -> Report:
    """Write ``out/report.md`` and ``out/report.html``; returns the :class:`Report`."""
    run, out = Path(run), Path(out)
    skipped: list[str] = []
    sections = collect(run, out, skipped)
    title = title or f"headlab report — {run.name}"
    viewer = next((p for p in sorted(run.glob("*.html")) if p.name != "report.html"), None)
    md = [f"# {title}", "", f"Results found in `{run}`: " + ", ".join(s.title for s in sections) + "."]
    found = [f"- **{s.title}**: {s.finding}" for s in sections if s.finding]
    if found:
        md += ["", "## In short", "", *found]
    if viewer is not None:
        rel = Path("..") / viewer.relative_to(run) if out.parent == run else viewer.resolve()
        md += ["", f"Interactive attention viewer: [{viewer.name}]({rel.as_posix()})"]
    for s in sections:
        md += ["", f"## {s.title}", "", s.markdown]
    if skipped:
        md += ["", "## Left out", "", "Results found but not in this report (unreadable, or of a kind it has no "
               "section for):", "",
               *(f"- {why}" for why in skipped)]
    text = "\n".join(md) + "\n"
    write_text_atomic(out / "report.md", text)
    body = safe_markdown(text)  # a result folder from someone else may carry markup in names and texts
    write_text_atomic(out / "report.html", f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                      f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\"><title>"
                      f"{html.escape(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n")
    return Report(out, [s.title for s in sections], sum(len(s.figures) for s in sections), skipped)


__all__ = ["Section", "collect", "report"]
