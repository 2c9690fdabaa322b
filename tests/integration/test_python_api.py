"""The notebook face on a packaged model: a scan's frame is its arrays, the viewer embeds inline with its
Content-Security-Policy intact, and writing is explicit."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest

import headlab
from headlab.errors import HeadlabError
from tests.support import need

pytestmark = pytest.mark.integration


def test_scan_frame_equals_its_arrays_and_per_sample_rows(tmp_path: Path) -> None:
    need("minilm-l6")
    r = headlab.scan("minilm-l6", max_samples=12, max_length=64, target_filter="with-target", progress=False,
                     per_sample=str(tmp_path / "s.parquet"), out=tmp_path / "scan")
    df = r.to_pandas()
    assert len(df) == r.n_layers * r.n_heads
    assert r.n_samples_with_target == 12 and not df["token"].isna().any()
    assert np.allclose(df["token"].to_numpy(dtype=float), r.means["token"].reshape(-1), equal_nan=True)
    assert list(df["head"][:2]) == ["0.0", "0.1"]
    assert len(r.per_sample()) == r.n_samples
    shown = r._repr_html_()
    assert "<table>" in shown and "minilm" in shown and f"<td>{r.top('token', 1)[0][0]}=" in shown
    assert (tmp_path / "scan" / "scan.json").exists()
    with pytest.raises(HeadlabError, match="already holds scan.json"):
        headlab.scan("minilm-l6", max_samples=4, progress=False, out=tmp_path / "scan")


def test_viewer_embeds_inline_and_saves_only_when_asked(tmp_path: Path) -> None:
    need("minilm-l6")
    page = headlab.view("minilm-l6", text="see https://example.org/a/b and a/b", progress=False)
    frame = page._repr_html_()
    m = re.fullmatch(r'<iframe srcdoc="([^"]*)" sandbox="allow-scripts" [^>]*></iframe>', frame, re.S)
    assert m is not None
    inner = html.unescape(m.group(1))
    assert inner == page.html and "Content-Security-Policy" in inner and "default-src 'none'" in inner
    assert not list(tmp_path.iterdir())
    path = page.save(tmp_path / "v.html")
    assert path.read_text() == page.html
    with pytest.raises(HeadlabError, match="already holds v.html"):
        page.save(tmp_path / "v.html")
