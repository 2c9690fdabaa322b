"""The rule book's ledger, ``verdict_changes.json`` (rendered beside it as ``verdict_changes.md``): one entry per
version of the rule book, with why its rules changed, every rule's fingerprint (its declared text and its decision's
source) and each committed verdict that moved when ``headlab verdicts --record`` re-judged the results. A unit test
fails when the book's fingerprints differ from the latest entry's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headlab.errors import HeadlabError
from headlab.io import write_text_atomic
from headlab.result import Result
from headlab.rulebook import VERSION, fingerprints

INTRO = ("# Verdict changes\n\nOne section per version of the rule book (`headlab.rulebook`): why its rules changed, "
         "the fingerprint of every rule (its declared text and its decision's source), and each committed verdict "
         "that moved when `headlab verdicts --record` re-judged the results. A unit test fails when the rule book's "
         "fingerprints differ from the latest section's.")
_COLUMNS = ("where", "row", "rule", "old", "new", "why")


def _inline(text: str) -> str:
    """``text`` on one line, its ``|`` escaped: a line break in a reason would start a section of its own (a
    forged ``## Version``), a ``|`` a cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


@dataclass
class BookVersion(Result):
    """One version of the rule book: why it changed, each rule's fingerprint, the verdicts that moved (each with
    ``where`` (the result file), ``row``, ``rule``, ``old``, ``new`` and ``why`` (the rule's power statement))."""

    version: int
    why: str
    fingerprints: dict[str, str]
    changes: list[dict[str, str]]

    def markdown(self) -> str:
        why = _inline(self.why)
        why = "\\" + why if why.startswith(("#", ">", "-", "=", "+", "*")) else why  # not a heading, quote or list
        lines = [f"## Version {self.version}", "", why, "", "| rule | fingerprint |", "|---|---|"]
        lines += [f"| `{rid}` | `{fp}` |" for rid, fp in self.fingerprints.items()]
        lines += ["", "| result | row | rule | old verdict | new verdict | why (the rule's power statement) |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| `{_inline(c['where'])}` | {_inline(c['row'])} | `{_inline(c['rule'])}` | {_inline(c['old'])} | "
                  f"{_inline(c['new'])} | {_inline(c['why']) or '-'} |" for c in self.changes]
        if not self.changes:
            lines.append("| - | no verdict moved | | | | |")
        return "\n".join(lines)


@dataclass
class VerdictChangesResult(Result):
    """``verdict_changes.json``: every version of the rule book, oldest first."""

    KIND = "verdict_changes.json"
    COMPANIONS = ("verdict_changes.md",)
    versions: list[BookVersion]

    def markdown(self) -> str:
        return "\n\n".join([INTRO, *(v.markdown() for v in self.versions)]) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "verdict_changes.md", self.markdown())


def recorded(root: str | Path) -> BookVersion | None:
    """The latest version in ``root``'s ledger (None when it has none)."""
    path = Path(root) / VerdictChangesResult.KIND
    return VerdictChangesResult.read(path).versions[-1] if path.exists() else None


def open_ledger(root: str | Path) -> VerdictChangesResult:
    """``root``'s ledger, ready for the book's current version (empty when it has none); refused when that version
    is already in it or when only an older headlab's Markdown ledger is there (its history would be lost)."""
    root = Path(root)
    path, md = root / VerdictChangesResult.KIND, root / "verdict_changes.md"
    if md.exists() and not path.exists():
        raise HeadlabError(f"{md} has no {path.name} beside it (an older headlab's ledger): recording would "
                           "overwrite its history; move it aside first")
    ledger = VerdictChangesResult.read(path) if path.exists() else VerdictChangesResult([])
    number = ledger.versions[-1].version if ledger.versions else 0
    if number >= VERSION:
        raise HeadlabError(f"{path} already has a section for version {number}: bump rulebook.book.VERSION first")
    return ledger


def record(root: str | Path, changes: list[Any], why: str) -> Path:
    """Add the book's current version to ``root``'s ledger: ``why`` its rules changed, every rule's fingerprint,
    and the ``changes`` (:class:`headlab.reporting.verdicts.Change`) its re-judging made; returns the JSON file."""
    ledger = open_ledger(root)
    rows = [{k: getattr(c, k) for k in _COLUMNS} for c in changes]
    ledger.versions.append(BookVersion(VERSION, why, fingerprints(), rows))
    return ledger.write(root) / VerdictChangesResult.KIND


__all__ = ["BookVersion", "VerdictChangesResult", "open_ledger", "record", "recorded"]
