"""Published numbers are rendered numbers: every generated block of README.md and docs/ equals what its
committed source under results/ gives (docsite/blocks.py), and every results path a document cites exists."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docsite"))
import blocks  # noqa: E402

DOCS = blocks.documents(ROOT)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_generated_blocks_are_up_to_date(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    fresh = blocks.render(text, blocks.up_of(doc, ROOT), ROOT)
    assert fresh == text, f"{doc.name}: a generated block is out of date; run python docsite/blocks.py"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_cited_result_exists(doc: Path) -> None:
    cited = set(re.findall(r"\bresults/[\w./{},-]*[\w}]", doc.read_text(encoding="utf-8")))
    missing = sorted(c for c in cited for path in _expanded(c) if not (ROOT / path).exists())
    assert not missing, f"{doc.name} cites results that are not committed: {missing}"


def _expanded(cited: str) -> list[str]:
    """``a.{md,json}`` as its paths; a path with a placeholder (``ARM-sSEED.json``) as its glob."""
    m = re.search(r"\{([^}]*)\}", cited)
    if m:
        return [p for alt in m.group(1).split(",") for p in _expanded(cited[:m.start()] + alt + cited[m.end():])]
    if re.search(r"[A-Z]{3,}", cited):
        pattern = re.sub(r"[A-Z]{3,}", "*", cited)
        return [str(p.relative_to(ROOT)) for p in ROOT.glob(pattern)][:1] or [cited]
    return [cited]


def test_an_edited_number_is_caught() -> None:
    doc = ROOT / "docs" / "scale.md"
    text = doc.read_text(encoding="utf-8")
    assert "<!-- generated: scale-table -->" in text
    tampered = re.sub(r"(<!-- generated: scale-table -->\n.*?\| )(\d+\.\d+)%", r"\g<1>99.9%", text, count=1,
                      flags=re.S)
    assert tampered != text and blocks.render(tampered, "../", ROOT) == text
