"""headlab view and headlab report on trained runs, and the page in a real headless Chromium (slow: trains).

The browser tests need Debian's chromium and Playwright (``make test`` installs both). They are skipped on a
machine without them, except under CI (``CI`` set), where a missing browser is a failure.
"""

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from headlab.cli import main
from headlab.errors import HeadlabError
from headlab.viewer import build, dequantize, kind_of, render

from ..support import TINY_RUN as TINY
from ..support import need

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[2] / "runs" / "browser-tests"
@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory):
    from headlab.formation.training_run import tracked_training as train
    from headlab.training import from_dict

    run = tmp_path_factory.mktemp("viewer") / "run"
    train(from_dict(json.loads(json.dumps(TINY))), run, progress=False)
    assert main(["track", str(run), "--n", "6", "--no-progress"]) == 0
    return run


@pytest.fixture(scope="module")
def retrieval_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("viewer") / "sweep"
    assert main(["retrieval", "sweep", "--layers", "2", "--depths", "2", "--curricula", "chain", "--seeds", "0",
                 "--steps", "40", "--batch-size", "16", "--eval-every", "20", "--checkpoint-every", "20",
                 "--d-model", "32", "--no-progress", "--jobs", "1", "--out", str(out)]) == 0
    return out


def test_training_run_page_has_every_checkpoint_map_and_nothing_external(tracked_run):
    assert kind_of(tracked_run) == "training" and kind_of("minilm-l6") == "model"
    data = build(tracked_run, progress=False)
    meta = data.meta()
    track = json.loads((tracked_run / "track" / "track.json").read_text())
    assert meta["steps"] == track["steps"] and len(meta["scores"]) == len(track["steps"])
    assert meta["scores"][-1]["previous-token"] == pytest.approx(np.array(track["scores"]["previous-token"][-1]))
    assert set(meta["phases"]) >= {"previous-token", "slash_mass"}
    # the head monitor's series: the latest monitor row at or before each checkpoint
    mon = [json.loads(x) for x in (tracked_run / "monitor.jsonl").read_text().splitlines()]
    at = {r["step"]: r for r in mon}
    assert meta["scores"][-1]["monitor entropy"] == pytest.approx(np.array(at[12]["scores"]["entropy"]))
    assert any(n.startswith("Head monitor:") for n in meta["notes"])
    assert meta["samples"][-1]["name"] == "repeated random tokens (the induction probe)"  # the repeat probe shown
    n_maps = len(meta["steps"]) * len(meta["samples"]) * 2 * 2
    assert len(data.maps) == n_maps and meta["map_checkpoints"] == list(range(len(meta["steps"])))
    page = render(data)
    assert page.count('type="text/plain" id="m-') == n_maps
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # no external script, style or link
    assert "http://" not in page.split('<script type="application/json"')[0]
    # a stored map decodes back to a row-stochastic lower-triangular matrix
    key = (len(meta["steps"]) - 1, 0, 1, 0)
    T = len(meta["samples"][0]["tokens"])
    m = dequantize(data.maps[key], T, True, data.scale)
    assert np.allclose(m.sum(1), 1, atol=0.05) and np.all(np.triu(m, 1) == 0)


def test_retrieval_run_page_shows_the_labelled_circuit(retrieval_run, tmp_path, monkeypatch):
    """The page reads the labels and every checkpoint's scores the analysis recorded; it measures nothing."""
    import headlab.retrieval.analysis as analysis
    import headlab.retrieval.hops as hops

    run = retrieval_run / "L2-D2-chain-s0"
    bare = tmp_path / "bare"
    shutil.copytree(run, bare)
    assert main(["retrieval", "analyze", str(run), "--n", "8", "--draws", "2"]) == 0
    for module, name in ((analysis, "head_profile"), (hops, "hop_profile")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("the viewer measured a profile"))
    data = build(run, progress=False)
    a = json.loads((run / "analyze" / "analyze.json").read_text())
    assert data.kind == "retrieval" and data.labels == a["labels"] and data.steps[-1] == 40
    assert data.steps == a["emergence"]["steps"]
    np.testing.assert_allclose(data.scores[-1]["best label mass"], a["emergence"]["scores"]["best label mass"][-1])
    assert data.samples[0].tokens[0] == "<bos>" and data.samples[0].marked  # the chain's tokens are highlighted
    unread = build(bare, progress=False)  # not analyzed: its maps, no scores, and what to run
    assert unread.labels is None and all(sc == {} for sc in unread.scores) and len(unread.maps) > 0
    assert "run headlab retrieval analyze RUN" in " ".join(unread.notes)


def test_a_dense_run_is_analyzed_by_hop_and_its_page_shows_the_hop_labels(tmp_path):
    from headlab.retrieval.stack import stacked_labels

    run = tmp_path / "dense"
    assert main(["retrieval", "train", "--depth", "3", "--curriculum", "dense", "--distractors", "1", "--steps", "40",
                 "--batch-size", "16", "--eval-every", "20", "--d-model", "32", "--init", "fan-in", "--untied",
                 "--no-progress", "--out", str(run)]) == 0
    assert main(["retrieval", "analyze", str(run), "--n", "8", "--draws", "2", "--min-lift", "0.05"]) == 0
    a = json.loads((run / "analyze" / "analyze.json").read_text())
    h = a["hops"]
    assert h["keys"] == ["def-var", "def-ref", "prev"] and np.asarray(h["mass"]).shape == (2, 4, 3, 3)
    assert sorted(h["ablation"]["base"]) == ["1", "2", "3"] and h["emergence"]["steps"]
    labels = [lab for row in h["labels"] for lab in row]
    assert all(lab == "-" or re.fullmatch(r"ref→(def-var|def-ref|prev)@[123]", lab) for lab in labels)
    assert "## Hops (dense targets)" in (run / "analyze" / "analyze.md").read_text()
    data = build(run, progress=False)
    # the page labels each head with its hop label and the hops its ablation shows it carries
    assert data.labels == stacked_labels(h["labels"], h.get("stack")) and "best hop lift" in data.scores[-1]
    assert main(["retrieval", "analyze", str(run), "--min-lift", "2", "--overwrite"]) == 2  # a share, one line


def test_view_errors_are_one_line(tmp_path, capsys):
    assert main(["view", str(tmp_path / "missing-model"), "--out", str(tmp_path / "x.html"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("headlab: error:")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert main(["view", "minilm-l6", "--texts-file", str(empty), "--out", str(tmp_path / "y.html")]) == 2


def test_report_finds_every_kind_and_draws_labelled_figures(tracked_run, retrieval_run, tmp_path):
    study = tmp_path / "study"
    shutil.copytree(tracked_run, study / "training")
    shutil.copytree(retrieval_run, study / "sweep")
    assert main(["report", str(study), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Training and formation — training" in md and "## Retrieval sweep — sweep" in md
    figs = re.findall(r"!\[[^\]]*\]\((figures/[^)]+)\)", md)
    assert len(figs) >= 8 and all((tmp_path / "rep" / f).stat().st_size > 1000 for f in figs)
    html = (tmp_path / "rep" / "report.html").read_text()
    head = html.split("<body>")[0]
    assert "<table>" in html and "<img" in html and "http://" not in head and "https://" not in head
    assert main(["report", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "r2")]) == 2
    (tmp_path / "emptydir").mkdir()
    assert main(["report", str(tmp_path / "emptydir")]) == 2


# ---- real browser -------------------------------------------------------------------------------------------

def _browser_or_skip():
    from headlab.viewer.browser import chromium_path

    try:
        import playwright  # noqa: F401
        ok = chromium_path() is not None
    except ImportError:
        ok = False
    if not ok:
        if os.environ.get("CI"):
            pytest.fail("CI needs chromium and playwright for the browser tests (make test installs them)")
        pytest.skip("no chromium/playwright on this machine (make test installs them)")


@pytest.mark.browser
def test_viewer_in_headless_chromium(tracked_run, tmp_path):
    # waits use selectors: string predicates would be eval'd, which the page's Content-Security-Policy forbids
    _browser_or_skip()
    from headlab.viewer import view
    from headlab.viewer.browser import open_page

    page_file = view(tracked_run, tmp_path / "viewer.html", progress=False)
    with open_page(page_file) as (page, log):
        page.wait_for_selector("#map[data-head]")  # opens on the top head of the first score
        page.click("#cell-1-0")
        page.wait_for_selector("#map[data-head='1.0']")
        drawn = page.evaluate("""() => { const c = document.getElementById('map');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let blue = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 2] > d[i] + 40) blue++; return blue; }""")
        assert drawn > 50  # the map's cells are painted (white → blue)
        grid_at = lambda: [page.get_attribute(f"#cell-{l}-{h}", "data-value") for l in (0, 1) for h in (0, 1)]
        last = grid_at()
        page.fill("#checkpoint", "0")
        page.dispatch_event("#checkpoint", "input")
        page.wait_for_selector("#map[data-checkpoint='0']")
        assert grid_at() != last  # the slider replays the grid at another checkpoint
        assert "step 1" in page.inner_text("#steplabel")
        page.hover("#cell-0-1")
        assert "head 0.1" in page.inner_text("#tip")
        # it opens on the share with the highest score at the last checkpoint (where the signal is)
        meta = json.loads(page.inner_text("#hl-meta"))
        last = meta["scores"][-1]
        shares = [m for m in meta["metrics"] if all(v is None or 0 <= v <= 1 for sc in meta["scores"]
                                                    for row in sc.get(m, []) for v in row)]
        tops = {m: max((v for row in last.get(m, []) for v in row if v is not None), default=-1) for m in shares}
        assert page.input_value("#metric") == max(shares, key=lambda m: (tops[m], -shares.index(m)))
        page.select_option("#metric", meta["metrics"][0])  # the scale checks below read the first score
        page.dispatch_event("#metric", "change")
        # a share is drawn on a fixed 0-1 scale by default, with a colour bar; unticked it stretches to its range
        assert page.is_checked("#fixed") and page.inner_text("#cblo") == "0.000" and page.inner_text("#cbhi") == "1.000"
        assert "gradient" in page.get_attribute("#cbar", "style")
        fixed_colours = grid_at()
        page.click("#fixed")
        assert not page.is_checked("#fixed") and "stretched over its range" in page.inner_text("#scale")
        assert grid_at() == fixed_colours  # the values stay; only their colours are stretched
        assert page.inner_text("#cbhi") != "1.000"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "viewer-training-run.png"), full_page=True)
    assert log["console_errors"] == [] and log["page_errors"] == []
    assert log["requests"] == []  # nothing but the file itself
    assert (ARTIFACTS / "viewer-training-run.png").stat().st_size > 10_000


@pytest.mark.browser
@pytest.mark.integration
def test_viewer_of_a_packaged_model_marks_slash_tokens(tmp_path):
    _browser_or_skip()
    from headlab.viewer import view
    from headlab.viewer.browser import open_page

    need("minilm-l6")
    text = "See https://example.com/docs/api and/or the 2024/05/01 notes in /usr/share/doc."
    page_file = view("minilm-l6", tmp_path / "minilm.html", [("url text", text)], progress=False)
    with open_page(page_file) as (page, log):
        page.click("#cell-2-3")
        page.wait_for_selector("#map[data-head='2.3']")
        meta = json.loads(page.inner_text("#hl-meta"))
        assert len(meta["samples"][0]["marked"]) >= 5 and meta["n_layers"] * meta["n_heads"] == 72
        assert page.locator("#tokens text.slash").count() >= 10  # '/' tokens highlighted on both sides
        assert "orange = '/'" in page.inner_text("#maptitle")
        page.screenshot(path=str(ARTIFACTS / "viewer-minilm.png"), full_page=True)
    assert log["console_errors"] == [] and log["page_errors"] == [] and log["requests"] == []
    plain = view("minilm-l6", tmp_path / "plain.html", [("plain", "A sentence with no mark at all.")], progress=False)
    with open_page(plain) as (page, log):
        page.click("#cell-2-3")
        page.wait_for_selector("#map[data-head='2.3']")
        assert "rows = queries" in page.inner_text("#maptitle") and "orange" not in page.inner_text("#maptitle")
        page.hover("#cell-2-3")
        tip = page.inner_text("#tip")
        assert "head 2.3" in tip and "previous-token:" in tip and "token: n/a" not in tip  # no '/' to score
    assert log["console_errors"] == [] and log["page_errors"] == []
    with pytest.raises(HeadlabError, match="window is 512"):
        view("minilm-l6", tmp_path / "long.html", [("long", "word / " * 400)], progress=False)


def test_an_untracked_training_run_is_read_not_measured_unless_texts_are_given(tracked_run, tmp_path, monkeypatch):
    """Without a track the page shows what the run holds (the head monitor's series) and says to run track; only
    texts given to it are scored."""
    import headlab.formation.view as fview

    run = tmp_path / "untracked"
    shutil.copytree(tracked_run, run, ignore=shutil.ignore_patterns("track"))
    monitored = {f"monitor {m}" for m in ("slash_mass", "previous-token", "induction", "sink", "entropy")}
    calls = []
    real = fview.score_probes
    monkeypatch.setattr(fview, "score_probes", lambda *a, **k: calls.append(1) or real(*a, **k))
    data = build(run, progress=False)
    assert not calls and set(data.scores[0]) == monitored and data.phases is None
    assert "run headlab track RUN" in " ".join(data.notes)
    data = build(run, [("given", "a / b and c / d")], progress=False)
    assert calls and set(data.scores[0]) == {"slash_mass", "offset", "previous-token", "sink"} | monitored
    assert all(np.isfinite(sc["previous-token"]).all() for sc in data.scores)
    assert "the shown texts" in " ".join(data.notes)


@pytest.mark.browser
@pytest.mark.integration
def test_inline_viewer_runs_inside_a_notebook_like_page_with_no_request(tmp_path):
    """What Jupyter shows for ``headlab.view(...)``: the frame's page loads, draws and reacts, and neither it
    nor its host requests anything."""
    _browser_or_skip()
    import headlab
    from headlab.viewer.browser import open_page

    need("minilm-l6")
    inline = headlab.view("minilm-l6", text="See https://example.com/a/b and/or c.", progress=False)
    host = tmp_path / "notebook.html"
    host.write_text(f'<!DOCTYPE html><html><body data-ready="1"><h1>a notebook cell</h1>'
                    f"{inline._repr_html_()}</body></html>")
    with open_page(host) as (page, log):
        frame = page.frames[1]
        frame.wait_for_selector("body[data-ready='1']")
        frame.click("#cell-2-3")
        frame.wait_for_selector("#map[data-head='2.3']")
        assert frame.locator("#tokens text.slash").count() >= 2
    assert log["console_errors"] == [] and log["page_errors"] == [] and log["requests"] == []


HOSTILE = "<!--<script>x</script><script>window.pwned=1</script>&amp;\u2028"


@pytest.mark.browser
@pytest.mark.integration
def test_a_page_built_from_hostile_names_renders_and_runs_nothing(tmp_path):
    """A model folder, a sample label and a text made of comment and script openers: the page renders (grid,
    tokens, the name shown as text) and no script of theirs runs."""
    _browser_or_skip()
    from headlab.models.registry import NAMED_MODELS
    from headlab.viewer import view
    from headlab.viewer.browser import open_page

    need("minilm-l6")
    folder = tmp_path / f"m{HOSTILE.replace('/', '_')}"
    folder.symlink_to(NAMED_MODELS["minilm-l6"].locate(), target_is_directory=True)
    page_file = view(str(folder), tmp_path / "hostile.html", [(HOSTILE, f"a / b {HOSTILE} c / d")], progress=False)
    text = page_file.read_text(encoding="utf-8") if isinstance(page_file, Path) else Path(page_file).read_text()
    meta_block = text.split('id="hl-meta">', 1)[1].split("</script>", 1)[0]
    assert "<" not in meta_block and "&" not in meta_block  # nothing in the embedded JSON can switch the parser
    with open_page(page_file) as (page, log):
        page.wait_for_selector("#map[data-head]")
        assert "<!--<script>" in page.inner_text("#title") + page.inner_text("#subtitle")
        assert page.locator("#grid [id^=cell-]").count() == 72
        assert page.evaluate("() => window.pwned === undefined")
    assert log["console_errors"] == [] and log["page_errors"] == [] and log["requests"] == []


JS_LINKS = ["javascript:window.pwned=2", "java&#x73;cript:window.pwned=3", " JAVASCRIPT:window.pwned=4"]


def _inert(page) -> None:
    """Nothing on the page can run a script: no script element, no event-handler attribute, no javascript: or
    data: target; every link clicked runs nothing."""
    assert page.locator("script").count() == page.locator("script[id^=hl-], script[type='application/json']").count()
    assert page.evaluate("""() => [...document.querySelectorAll('*')].flatMap(e => [...e.attributes])
        .filter(a => a.name.startsWith('on') || /^\\s*(javascript|data|vbscript):/i.test(a.value)).length""") == 0
    for link in page.locator("a[href]").all()[:20]:
        link.click(modifiers=["Alt"], no_wait_after=True)  # Alt: download instead of navigate, where it is a file
    assert page.evaluate("() => window.pwned === undefined")


@pytest.mark.browser
@pytest.mark.integration
def test_a_report_and_a_notebook_repr_built_from_hostile_names_and_texts_run_nothing(tmp_path):
    """The other two HTML writers: a report over a scan whose model name and warnings hold markup and
    javascript: links, and a result's notebook repr (its _repr_html_ in a page), opened in Chromium."""
    _browser_or_skip()
    import json

    import headlab
    from headlab.viewer.browser import open_page

    need("minilm-l6")
    run = tmp_path / "run"
    headlab.scan("minilm-l6", ["a / b c / d", "e f / g"], out=run / "scan", progress=False)
    scan_json = run / "scan" / "scan.json"
    d = json.loads(scan_json.read_text())
    links = " ".join(f"[click]({t}) <a href=\"{t}\">raw</a>" for t in JS_LINKS)
    d["model"] = HOSTILE + " " + links + " <img src=x onerror=window.pwned=5>"
    d["warnings"] = [HOSTILE, links]
    d.pop("content_sha256")  # a file without headlab's seal reads as one written before seals
    scan_json.write_text(json.dumps(d))
    headlab.report(run, title=HOSTILE + links)
    html_file = run / "report" / "report.html"
    with open_page(html_file, ready=None) as (page, log):
        _inert(page)
    own = (run / "report").resolve().as_uri()
    assert log["page_errors"] == [] and all(u.startswith(own) for u in log["requests"]), log  # its own figures
    host = tmp_path / "notebook.html"
    r = headlab.ScanResult.read(run / "scan")
    host.write_text(f"<!doctype html><html><body>{r._repr_html_()}</body></html>", encoding="utf-8")
    with open_page(host, ready=None) as (page, log):
        _inert(page)
    assert log["page_errors"] == [] and log["requests"] == []


def test_every_folder_kind_is_recognized_by_the_registry_and_a_claims_study_opens(tmp_path):
    """The folder kinds come from the registry each package adds its kind to (by the result kinds a folder
    holds), not from a chain of file checks; a claims study (results/study/claims) opens on its first model's
    scan."""
    need("minilm-l6")
    from headlab.viewer import SOURCES

    root = Path(__file__).resolve().parents[2] / "results" / "study" / "claims"
    assert [s.kind for s in sorted(SOURCES.values(), key=lambda s: s.rank)] == ["retrieval", "training", "scan",
                                                                               "claims"]
    assert kind_of(root) == "claims" and kind_of(root / "minilm-l6") == "scan"
    data = build(root, progress=False)
    assert "minilm-l6" in data.title and data.n_layers == 6
    with pytest.raises(HeadlabError, match="holds no run headlab can show"):
        kind_of(tmp_path)
    # a folder of results the viewer does not draw names what does: report for its results, view for its folders
    with pytest.raises(HeadlabError, match=r"it holds scale.json: headlab report \S+ renders that; view one of its "
                       r"folders: claims, trained"):
        kind_of(root.parent)


def test_a_scan_folders_page_shows_windows_of_the_scanned_corpus_not_the_slash_defaults(tmp_path):
    """The viewer of a scan showed a Python-docs window with '/' and slash stimuli whatever was scanned; it now
    draws its maps on the scan's own first windows."""
    from headlab.cli import main
    from headlab.viewer import build

    need("minilm-l6")
    corpus = tmp_path / "plain.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "body": f"the {w} river runs past the mill {i} times"}) + "\n"
                              for i, w in enumerate(["slow", "wide", "cold", "deep"])))
    out = tmp_path / "scan"
    assert main(["scan", "minilm-l6", "--corpus", str(corpus), "--text-field", "body", "--no-progress",
                 "--out", str(out)]) == 0
    data = build(out, progress=False)
    names = [s.name for s in data.samples]
    assert names and all(n.startswith("scanned corpus window") for n in names)
    assert all("river" in "".join(s.tokens) for s in data.samples) and not any(s.marked for s in data.samples)
