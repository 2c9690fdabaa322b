"""HTML from data is inert: one rule for links (display.link_allowed, used by every Markdown headlab renders)
and one for JSON embedded in a page (viewer.page.safe_json)."""

from __future__ import annotations

import json
import re

import pytest

from headlab.display import link_allowed, safe_markdown
from headlab.viewer.page import safe_json

HOSTILE_LINKS = ["javascript:alert(1)", "javascript&#58;alert(1)", "java&#x73;cript:alert(1)", " JAVASCRIPT:x",
                 "jav\tascript:x", "java\nscript:x", "&#106;avascript:x", "javascript&amp;#58;x", "data:text/html,x",
                 "vbscript:x", "\x01javascript:x"]


@pytest.mark.parametrize("target", HOSTILE_LINKS)
def test_hostile_link_targets_are_refused(target):
    assert not link_allowed(target)


@pytest.mark.parametrize("target", ["https://example.com/a", "http://x.org", "figures/a b.png", "../scan.md",
                                    "#top", "mailto:someone@example.com", "plain"])
def test_safe_and_relative_targets_pass(target):
    assert link_allowed(target)


def test_rendered_markdown_keeps_no_script_link():
    md = "\n".join(f"[x{i}]({t.strip()})" for i, t in enumerate(HOSTILE_LINKS) if "\n" not in t and "\t" not in t)
    html = safe_markdown(md + "\n\n<img src=x onerror=alert(1)> [ok](https://example.com)")
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert "https://example.com" in hrefs
    assert all(link_allowed(h) for h in hrefs)
    assert "<img" not in html  # raw HTML is text


def test_embedded_json_has_no_markup_characters_and_reads_back():
    obj = {"name": "</script><!--<script>alert(1)</script>", "amp": "&lt;", "ls": "a\u2028b\u2029c", "n": [1, 2.5]}
    text = safe_json(obj)
    assert not set("<>&") & set(text) and "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == obj
