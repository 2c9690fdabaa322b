"""A report from folders whose names hold spaces, parentheses and quotes keeps its figures, and names in the
report itself every result it could not read."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[2]


def test_figure_links_survive_odd_folder_names_and_a_damaged_result_is_named(tmp_path):
    import re

    from headlab.notices import recorded
    from headlab.reporting import report

    run = tmp_path / "my run (v2) 'a'"
    shutil.copytree(ROOT / "results" / "study" / "claims" / "minilm-l6", run / "mini lm (x)")
    (run / "broken").mkdir()
    (run / "broken" / "scan.json").write_text('{"model": "x", "n_lay')
    with recorded() as said:
        r = report(run, tmp_path / "out")
    assert r.figures >= 1 and any("broken" in w for w in r.left_out) and any("left out" in m for m in said)
    md = r.markdown_file.read_text()
    assert "## Left out" in md and "broken/scan.json" in md
    links = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", md)
    assert links and all((tmp_path / "out" / unquote(link)).exists() for link in links)


def test_monitor_results_have_sections_and_a_kind_without_one_is_named_not_dropped(tmp_path):
    from headlab.notices import recorded
    from headlab.reporting import report

    run = tmp_path / "run"
    shutil.copytree(ROOT / "results" / "monitor" / "minilm-l6", run / "monitor")
    (run / "sdh").mkdir()
    shutil.copy(ROOT / "results" / "formation" / "sdh" / "dense" / "s0" / "measure.json", run / "sdh")
    with recorded() as said:
        r = report(run, tmp_path / "out")
    assert r.sections == ["Head monitor evaluation — monitor"] and r.figures == 1
    assert any("measure.json" in w and "no section" in w for w in r.left_out)
    assert any("sdh/measure.json" in m and "left out" in m for m in said)
    assert "sdh/measure.json" in r.markdown_file.read_text().split("## Left out", 1)[1]
