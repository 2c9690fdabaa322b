"""Every relative link of README.md, BENCHMARKS.md and docs/ leads to a file of the checkout (as GitHub shows
them); the site's own pages (built by docsite/hooks.py) count as files of docs/. mkdocs --strict checks the
site itself in make test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]
SITE_PAGES = {ROOT / "docs" / "benchmarks.md"}  # generated from BENCHMARKS.md at build time
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code is not a link
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists() and path not in SITE_PAGES:
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links to missing files {broken}"


def test_the_site_shows_a_docstrings_sphinx_role_as_the_code_it_names() -> None:
    from docsite.hooks import on_page_content

    html = "see :func:<code>headlab.scan</code> and :data:<code>~headlab.values.RULES</code>; a:b <code>x</code>"
    assert on_page_content(html, None, None, None) == ("see <code>headlab.scan</code> and <code>RULES</code>; "
                                                       "a:b <code>x</code>")
