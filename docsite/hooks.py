"""mkdocs hooks of the documentation site (``make docs``): the benchmarks page from BENCHMARKS.md (its links
rewritten for their new place) and the result figures the pages show. Nothing under ``docs/`` is rewritten on
disk (the generated tables of the pages are rendered by ``docsite/blocks.py`` and checked by a test).
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]

def _relink(text: str, up: str) -> str:
    """Links of a root file (written from the repository root) as seen from a site page ``up`` levels below
    the site root (``up``: "" or "../"): ``docs/X`` is the site's ``X``, BENCHMARKS.md its benchmarks page."""
    def fix(m: re.Match) -> str:
        target = m.group(2)
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        if target.startswith("docs/"):
            target = target[len("docs/"):]
        elif target == "BENCHMARKS.md":
            target = "benchmarks.md"
        return f"{m.group(1)}({up}{target})"

    return re.sub(r"(!?\[[^\]]*\])\(([^)\s]+)\)", fix, text)


def on_files(files: Files, config) -> Files:
    bench = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "benchmarks.md", content=_relink(bench, "")))
    for png in sorted((ROOT / "results").rglob("*.png")):
        files.append(File.generated(config, png.relative_to(ROOT).as_posix(), abs_src_path=str(png)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Pages under docs/ show result figures as ``../results/...`` (``../../results/`` one folder down: right on
    GitHub); on the site the figures live at ``results/...`` under the site root."""
    up = "../" * page.file.src_uri.count("/")
    return markdown.replace(f"](../{up}results/", f"]({up}results/")


_ROLE = re.compile(r":(?:func|class|data|mod|meth|attr|obj|exc):<code>~?([^<]*)</code>")


def on_page_content(html: str, page, config, files) -> str:
    """Docstrings name code with Sphinx roles (``:func:`x```, for Python's help() and editors); mkdocstrings
    shows them as written, so on the site a role becomes the code it names (``~a.b.c``: ``c``)."""
    return _ROLE.sub(lambda m: f"<code>{m.group(1).rsplit('.', 1)[-1] if m.group(0).count('~') else m.group(1)}</code>",
                     html)
