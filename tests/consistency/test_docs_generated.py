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


#: numbers a page states as a definition or a setting, not a measurement
DEFINED = {"0.5", "0.25", "0.8", "0.7", "16.0", "1.4826", "0.004", "2.10", "0.02", "0.95", "0.99"}
_NUMBER = re.compile(r"(?<![\w.\-])[-−+]?\d+\.\d+(?![\w.])")


#: an arXiv identifier (a citation) looks like a number but measures nothing
_ARXIV = re.compile(r"arXiv:\d{4}\.\d{4,5}")


def _prose(text: str) -> str:
    text = re.sub(r"<!-- generated:.*?<!-- end[^>]*-->", "", text, flags=re.S)
    return _ARXIV.sub("", re.sub(r"```.*?```", "", text, flags=re.S))


def _cited_text(text: str) -> str:
    """Every committed text file in the folders of the results (and BENCHMARKS.md) a page cites."""
    folders = {(ROOT / path).parent for c in re.findall(r"\bresults/[\w./{},-]*[\w}]", text) for path in _expanded(c)}
    files = [f for d in folders if d.is_dir() for f in d.rglob("*") if f.suffix in (".md", ".json", ".txt", ".csv")]
    if "BENCHMARKS.md" in text:
        files.append(ROOT / "BENCHMARKS.md")
    return "".join(f.read_text(encoding="utf-8", errors="replace") for f in files)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_measured_number_in_prose_is_in_a_result_the_page_cites(doc: Path) -> None:
    """A reading may quote a number only from a result it cites (as there, or rounded to fewer digits); numbers
    of pages that cite no result are definitions and settings."""
    text = doc.read_text(encoding="utf-8")
    cited = _cited_text(text)
    if not cited:
        return
    held = {f"{abs(float(x)):.{d}f}" for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", cited) for d in range(1, 5)}
    quoted = {n.replace("−", "-").lstrip("+-") for n in _NUMBER.findall(_prose(text))}
    unsupported = sorted(n for n in quoted - DEFINED if n not in held)
    assert not unsupported, f"{doc.name} quotes numbers no cited result holds: {unsupported}"


def test_an_edited_reading_number_is_caught() -> None:
    doc = ROOT / "docs" / "growing.md"
    text = doc.read_text(encoding="utf-8")
    held = {f"{abs(float(x)):.3f}" for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", _cited_text(text))}
    assert "0.245" in held and "0.743" not in held  # the reading's number is held; an edited one would not be


#: decimals and percentages typed in docs prose outside generated blocks, code and inline code: a result belongs in
#: a generated block (it cannot drift from its file); what remains explains a method (defaults, thresholds, chance
#: lines, head names written L.H; typed tables hold definitions and defaults only). The budget only falls.
TYPED_BUDGET = 16
_TYPED = re.compile(r"(?<![\w.])[-−+]?\d+(?:\.\d+)?%|(?<![\w.])[-−+]?\d*\.\d+(?![\w.])")
#: measured integers typed in prose count too: an outcome count ("8 of 9 runs", "0/54") and a wall time ("402 s");
#: a fraction with numerator 1 or a 0/1 is a definition (a chance line, a smallest p, a mask), not a measurement
_MEASURED = re.compile(r"(?<![\w.,/^])\d[\d,]* of \d[\d,]*(?![\w.,/])|(?<![\w.,/^])\d+/\d+(?![\w.,/])"
                       r"|(?<![\w.,])\d[\d,]* (?:s|min|minutes|hours)\b")
_DEFINITION = re.compile(r"1/\d+|0/1")


def typed_numbers(text: str) -> list[str]:
    text = blocks.BLOCK.sub("", text)
    text = _ARXIV.sub("", re.sub(r"```.*?```", "", text, flags=re.S))
    text = re.sub(r"`[^`]*`", "", text)
    measured = [m for m in _MEASURED.findall(text) if not _DEFINITION.fullmatch(m)]
    return _TYPED.findall(text) + measured


def test_measured_integers_count_as_typed_numbers() -> None:
    said = typed_numbers("Coverage: 189 of 216 runs, 12,474 s summed; one layer never learns (0/54); chance 1/2; "
                         "a 0/1 mask; 3,000 steps; `8 of 9`\n| 5 of 6 | a typed table |\n")
    assert said == ["189 of 216", "12,474 s", "0/54", "5 of 6"]


def test_few_numbers_are_typed_in_docs_prose():
    found = {str(d.relative_to(ROOT)): typed_numbers(d.read_text(encoding="utf-8"))
             for d in sorted((ROOT / "docs").rglob("*.md"))}
    total = sum(map(len, found.values()))
    worst = sorted(((len(v), k, v[:8]) for k, v in found.items() if v), reverse=True)[:5]
    assert total <= TYPED_BUDGET, f"{total} numbers typed in docs prose (budget {TYPED_BUDGET}); most in {worst}"


def test_every_shipped_detector_has_its_definition_in_scores_md() -> None:
    """docs/scores.md defines every score once: a built-in detector without its section is a detector nothing
    documents (marked and linked had none)."""
    import re

    from headlab.detectors import DETECTORS

    text = (Path(__file__).resolve().parents[2] / "docs" / "scores.md").read_text()
    headed = {name for line in text.splitlines() if line.startswith("## ") for name in re.findall(r"`([\w-]+)`", line)}
    shipped = {n for n, cls in DETECTORS.items() if cls.__module__.startswith("headlab.")}
    assert shipped <= headed, sorted(shipped - headed)
