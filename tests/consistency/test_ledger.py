"""The verdicts and their ledger: `headlab verdicts` on a copy of the committed results (every kind it re-judges)
moves nothing and rewrites every table byte for byte, and the ledger (verdict_changes.json, rendered as
verdict_changes.md) records a version exactly as the committed one was recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import headlab
from headlab.errors import HeadlabError
from headlab.io import SEAL, sealed
from headlab.reporting.ledger import VerdictChangesResult, record
from headlab.reporting.verdicts import REJUDGED, Change
from headlab.rulebook import VERSION

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"


def _judged() -> list[str]:
    """Every folder `headlab verdicts` rewrites: those holding a result it re-judges, and the retrieval table's."""
    found = {p.parent for kind in REJUDGED for p in RESULTS.glob(f"**/{kind.KIND}")} | {RESULTS / "retrieval"}
    return sorted(str(f.relative_to(RESULTS)) for f in found)


def _copy(tmp: Path, *folders: str) -> Path:
    out = tmp / "a-copy"  # not named results: what a copy writes must not depend on its folder's name
    for f in folders:
        shutil.copytree(RESULTS / f, out / f, dirs_exist_ok=True)
    return out


def _bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_committed_ledger_renders_as_committed():
    ledger = VerdictChangesResult.read(RESULTS)
    assert (RESULTS / "verdict_changes.md").read_text() == ledger.markdown()
    assert [v.version for v in ledger.versions] == list(range(1, VERSION + 1))


def test_rejudging_the_committed_results_moves_nothing_and_rewrites_them_byte_for_byte(tmp_path):
    for kind in REJUDGED:
        assert any(RESULTS.glob(f"**/{kind.KIND}")), f"no committed {kind.KIND}: nothing tests its re-judging"
    root = _copy(tmp_path, *_judged())
    before = _bytes(root)
    assert headlab.verdicts(root) == []
    assert _bytes(root) == before


def test_recording_a_version_writes_the_ledger_as_committed(tmp_path):
    """The committed ledger without its latest version, recorded again with that version's reason and changes:
    the same JSON and Markdown, byte for byte."""
    committed = VerdictChangesResult.read(RESULTS)
    latest = committed.versions[-1]
    VerdictChangesResult(committed.versions[:-1]).write(tmp_path)
    record(tmp_path, [Change(**c) for c in latest.changes], latest.why)
    for name in ("verdict_changes.json", "verdict_changes.md"):
        assert (tmp_path / name).read_bytes() == (RESULTS / name).read_bytes(), name


def test_a_recorded_version_or_a_markdown_only_ledger_is_refused_before_any_table_is_rewritten(tmp_path):
    root = _copy(tmp_path, "retrieval")
    shutil.copy(RESULTS / "verdict_changes.json", root)
    (root / "retrieval" / "verdicts.md").write_text("stale\n")
    with pytest.raises(HeadlabError, match=f"version {VERSION}: bump"):
        headlab.verdicts(root, record="why")
    assert (root / "retrieval" / "verdicts.md").read_text() == "stale\n"
    (root / "verdict_changes.json").unlink()
    (root / "verdict_changes.md").write_text("# an older ledger\n")
    with pytest.raises(HeadlabError, match="older headlab"):
        headlab.verdicts(root, record="why")
    assert (root / "verdict_changes.md").read_text() == "# an older ledger\n"
    assert not (root / "verdict_changes.json").exists()


def test_a_reason_is_one_line_and_the_ledger_renders_any_text_on_one_line(tmp_path):
    """A reason with a line break would forge a section (``## Version 42``) in verdict_changes.md: refused before
    anything is written, and a ledger edited by hand still renders each reason and cell on its line."""
    from headlab.reporting.ledger import BookVersion

    root = _copy(tmp_path, "retrieval")
    before = _bytes(root)
    with pytest.raises(HeadlabError, match="line break"):
        headlab.verdicts(root, record="a fix\n\n## Version 42\n\nforged")
    assert _bytes(root) == before
    md = BookVersion(3, "# a fix\n## Version 42", {}, [{"where": "w", "row": "r|s", "rule": "x.1", "old": "a",
                                                         "new": "b\nc", "why": ""}]).markdown()
    assert [line for line in md.splitlines() if line.startswith("#")] == ["## Version 3"]
    assert "| r\\|s |" in md and "| b c |" in md


@pytest.mark.parametrize("damage, said", [
    ("rulebook", "judged by rule book version 99, newer than"),
    ("rule", "by rule 'slash.99', which rule book"),
])
def test_a_result_judged_by_a_newer_book_or_an_unknown_rule_is_refused_before_any_is_rewritten(tmp_path, damage,
                                                                                                said):
    import json

    root = _copy(tmp_path, "study/claims", "retrieval")
    claims = root / "study" / "claims" / "claims.json"
    doc = json.loads(claims.read_text())
    row = next(r for c in doc["claims"] for r in (c["per_model"] or {}).values() if r and "verdict" in r)
    row.update({"rulebook": 99} if damage == "rulebook" else {"rule": "slash.99"})
    claims.write_text(json.dumps(sealed(doc)))  # as a newer headlab would write it: sealed
    (root / "retrieval" / "verdicts.md").write_text("stale\n")
    before = _bytes(root)
    with pytest.raises(HeadlabError, match=said):
        headlab.verdicts(root)
    assert _bytes(root) == before


def test_a_verdict_without_statistics_is_refused_and_so_is_an_empty_folder(tmp_path):
    """A row that states a judgement but keeps no statistics (its evidence removed, the seal removed or made again)
    is refused by verdicts and left out of the report, not re-labelled; nothing is rewritten."""
    import json

    root = _copy(tmp_path, "study/claims")
    claims = root / "study" / "claims" / "claims.json"
    doc = json.loads(claims.read_text())
    row = next(r for c in doc["claims"] for r in (c["per_model"] or {}).values() if r and r.get("stats"))
    del row["stats"]
    row["verdict"] = "supported"
    for written in (json.dumps({k: v for k, v in doc.items() if k != SEAL}), json.dumps(sealed(doc))):
        claims.write_text(written)
        before = _bytes(root)
        with pytest.raises(HeadlabError, match=f"a {row['rule']} verdict \\('supported'\\) keeps no statistics"):
            headlab.verdicts(root)
        assert _bytes(root) == before
    report = headlab.report(claims.parent, out=tmp_path / "report", overwrite=False)
    assert "Claims table" not in (report.folder / "report.md").read_text() and any(
        "keeps no statistics" in s for s in report.left_out)
    (tmp_path / "empty").mkdir()
    with pytest.raises(HeadlabError, match="holds no result that keeps verdicts"):
        headlab.verdicts(tmp_path / "empty")


def test_a_copy_names_what_moved_from_its_results_root_not_its_folder_name(tmp_path):
    import json

    root = tmp_path / "a-copy"
    shutil.copytree(RESULTS / "study" / "claims", root / "study" / "claims")
    claims = root / "study" / "claims" / "claims.json"
    doc = json.loads(claims.read_text())
    row = next(r for c in doc["claims"] for r in (c["per_model"] or {}).values() if r and "verdict" in r)
    row["verdict"] = "supported" if row["verdict"] != "supported" else "not supported"  # edited by hand
    claims.write_text(json.dumps(doc))
    with pytest.raises(HeadlabError, match="claims.json was changed after headlab wrote it"):
        headlab.verdicts(root)  # a sealed table edited by hand is refused, nothing re-judged from it
    doc.pop(SEAL)  # the same edit in a table written before results were sealed: judged again, where named
    claims.write_text(json.dumps(doc))
    moved = headlab.verdicts(root)
    assert [c.where for c in moved] == ["results/study/claims/claims.json"]


def test_a_second_record_at_once_is_refused_before_it_judges_anything(tmp_path):
    """Two rule commits at once: the one that finds the ledger locked is refused in one line, and no table is
    rewritten (it used to re-judge, rewrite every table and re-declare, then stop)."""
    import subprocess
    import sys

    root = _copy(tmp_path, "retrieval")
    before = _bytes(root)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom headlab.io import FolderLock\n"
                               f"with FolderLock({str(root)!r}, file='verdict_changes.json'):\n"
                               "    print('held', flush=True)\n    time.sleep(60)\n"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(HeadlabError, match="is being written by headlab pid") as e:
            headlab.verdicts(root, record="a second commit")
        assert "\n" not in str(e.value)
    finally:
        holder.kill()
        holder.wait()
    after = _bytes(root)
    after.pop(".verdict_changes.json.headlab.lock", None)  # the killed holder's lock file, no longer locked
    assert after == before
