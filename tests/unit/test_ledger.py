"""The verdicts and their ledger: `headlab verdicts` on a copy of the committed results (every kind it re-judges)
moves nothing and rewrites every table byte for byte, and the ledger (verdict_changes.json, rendered as
verdict_changes.md) records a version exactly as the committed one was recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import headlab
from headlab.errors import HeadlabError
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
    out = tmp / "results"
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
