"""Result folders and texts from someone else are safe to report, view and display: hostile model names,
corpus texts and labels are shown as text, no script they carry runs, and no link they carry leads to
``javascript:`` (checked in headless Chromium: the page would set ``window.__pwned``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .test_viewer_pages import _browser_or_skip

ROOT = Path(__file__).resolve().parents[2]
IMG = '<img src=x onerror="window.__pwned=1">'
SCRIPT = "<script>window.__pwned=2</script>"
LINK = "[click](javascript:window.__pwned=3)"


def _hostile_scan(folder: Path) -> None:
    """A committed scan folder, rewritten as someone else might send it."""
    folder.mkdir(parents=True)
    d = json.loads((ROOT / "results/quickstart/scan/scan.json").read_text())
    d["model"] = f"m{IMG}{SCRIPT}{LINK}"
    d["warnings"] = [IMG]
    d.pop("content_sha256", None)  # sent without headlab's seal: read as a file written before seals
    (folder / "scan.json").write_text(json.dumps(d))


def test_markdown_from_data_is_escaped() -> None:
    from headlab.display import markdown_html, safe_markdown

    out = safe_markdown(f"a {IMG} {SCRIPT} {LINK} `{SCRIPT}` [ok](https://example.org) [rel](figures/a.png)")
    assert "<img" not in out and "<script" not in out and "javascript:" not in out
    assert 'href="https://example.org"' in out and 'href="figures/a.png"' in out
    assert "&lt;script&gt;" in markdown_html(SCRIPT)


@pytest.mark.browser
def test_a_hostile_result_folder_reports_and_views_safely(tmp_path: Path) -> None:
    _browser_or_skip()
    from headlab.reporting import report
    from headlab.viewer import build, write_html
    from headlab.viewer.browser import open_page

    run = tmp_path / f"run{'<b>'}"
    _hostile_scan(run / f"m{'<i>x</i>'}")
    paths = report(run, tmp_path / "report")
    html = paths.html_file.read_text()
    assert "Content-Security-Policy" in html and "<script" not in html.split("</title>")[1]
    with open_page(paths.html_file, ready=None) as (page, log):
        assert page.evaluate("window.__pwned") is None
        assert IMG in page.inner_text("body") and not page.query_selector("a[href^='javascript']")
        assert all(r.startswith("file://") for r in log["requests"]), log["requests"]  # its own figures only

    from tests.integration.test_entry_points import _nn_decoder

    lm = _nn_decoder()
    data = build(lm, [(f"sample {IMG}", f"a/b {SCRIPT}")], progress=False)
    data.title = f"title {IMG}"
    data.circuit = [{"head": IMG, "layer": SCRIPT, "label": IMG, "mass": 0.5}]
    data.phases = {m: {"0.0": [{"label": IMG, "start": 0, "end": 1}]} for m in data.scores[0]}
    page_file = write_html(data, tmp_path / "view.html")
    with open_page(page_file) as (page, log):
        page.evaluate("document.getElementById('cell-0-0').click()")
        page.wait_for_timeout(300)
        assert page.evaluate("window.__pwned") is None, "script from data ran in the viewer"
        assert IMG in page.inner_text("#circuit") and IMG in page.inner_text("#title")
        assert not log["page_errors"], log["page_errors"]
    shutil.rmtree(run)
