"""The verdicts and their ledger: `headlab verdicts` on a copy of the committed results moves nothing and rewrites
every table byte for byte, and the ledger (verdict_changes.json, rendered as verdict_changes.md) records a version
exactly as the committed one was recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import headlab
from headlab.errors import HeadlabError
from headlab.reporting.ledger import VerdictChangesResult, record
from headlab.rulebook import VERSION

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
JUDGED = ("study/claims", "study/trained", "retrieval")  # every folder `headlab verdicts` rewrites


def _copy(tmp: Path, *folders: str) -> Path:
    out = tmp / "results"
    for f in folders:
        shutil.copytree(RESULTS / f, out / f)
    return out


def _bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_committed_ledger_renders_as_committed():
    ledger = VerdictChangesResult.read(RESULTS)
    assert (RESULTS / "verdict_changes.md").read_text() == ledger.markdown()
    assert [v.version for v in ledger.versions] == list(range(1, VERSION + 1))


def test_rejudging_the_committed_results_moves_nothing_and_rewrites_them_byte_for_byte(tmp_path):
    assert sorted(str(p.parent.relative_to(RESULTS)) for p in RESULTS.glob("**/claims.json")) == \
        sorted(f for f in JUDGED if f != "retrieval")  # a new claims table belongs in JUDGED
    root = _copy(tmp_path, *JUDGED)
    before = _bytes(root)
    assert headlab.verdicts(root) == []
    assert _bytes(root) == before


def test_recording_a_version_writes_the_ledger_as_committed(tmp_path):
    """The committed ledger without its latest version, recorded again: the same JSON and Markdown, byte for byte
    (the latest version moved no verdict and its fingerprints are the book's)."""
    committed = VerdictChangesResult.read(RESULTS)
    latest = committed.versions[-1]
    assert latest.changes == [], "the latest version moved verdicts: this test needs one that did not"
    VerdictChangesResult(committed.versions[:-1]).write(tmp_path)
    record(tmp_path, [], latest.why)
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
