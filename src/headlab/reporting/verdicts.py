"""Every committed verdict re-judged by the current rule book (``headlab verdicts``): the claims tables from the
statistics their rows keep, the retrieval table from its result files. A rule's own commit runs this, and the
verdicts that moved are written to ``verdict_changes.md`` under the book's version with its fingerprints."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from headlab.io import write_json_atomic, write_text_atomic
from headlab.result import read_json
from headlab.retrieval import verdicts as retrieval_verdicts
from headlab.rulebook import VERSION, fingerprints, label
from headlab.study.claims import ClaimsResult, rejudge

CHANGES = "verdict_changes.md"
_SECTION = re.compile(r"^## Version (\d+)\n(.*?)(?=^## Version |\Z)", re.S | re.M)
_PRINT = re.compile(r"^\| `([\w.-]+)` \| `([0-9a-f]{12})` \|$", re.M)


@dataclass(frozen=True)
class Change:
    where: str
    row: str
    rule: str
    old: str
    new: str
    why: str


def _claims_changes(path: Path, root: Path) -> list[Change]:
    old = ClaimsResult.decode(read_json(path))
    before = {(m.model, cid): label(row) for m in old.models for cid, row in m.rows.items()}
    before[("*", 7)] = label(old.cross)
    new = rejudge(old)
    new.write(path.parent)
    after = {(m.model, cid): (row, label(row)) for m in new.models for cid, row in m.rows.items()}
    after[("*", 7)] = (new.cross, label(new.cross))
    where = str(path.relative_to(root.parent))
    return [Change(where, f"claim {cid} on {model}", row.get("rule", ""), before.get((model, cid), "-"), label,
                   row.get("power", "")) for (model, cid), (row, label) in after.items()
            if before.get((model, cid)) != label]


def _retrieval_changes(folder: Path, root: Path) -> list[Change]:
    old_file = folder / "verdicts.json"
    before = {r["row"]: label(r) for r in read_json(old_file)["rows"]} if old_file.exists() else {}
    table = retrieval_verdicts.rows(folder)
    write_json_atomic(old_file, {"rulebook": VERSION, "rows": table})
    write_text_atomic(folder / "verdicts.md", retrieval_verdicts.markdown(table))
    where = str(old_file.relative_to(root.parent))
    return [Change(where, r["row"], r["rule"], before.get(r["row"], "-"), label(r), r["power"]) for r in table
            if before.get(r["row"]) != label(r)]


def rejudge_all(root: str | Path) -> list[Change]:
    """Re-judge every committed claims table and the retrieval verdicts under ``root`` (``results/``), rewrite
    them, and return the verdicts that changed."""
    base = Path(root).resolve()
    changes: list[Change] = []
    for path in sorted(base.glob("**/claims.json")):
        changes += _claims_changes(path, base)
    if (base / "retrieval").is_dir():
        changes += _retrieval_changes(base / "retrieval", base)
    return changes


def recorded_fingerprints(text: str) -> tuple[int, dict[str, str]]:
    """The latest version section of ``verdict_changes.md``: its number and its rule fingerprints."""
    sections = _SECTION.findall(text)
    if not sections:
        return 0, {}
    number, body = max(sections, key=lambda s: int(s[0]))
    return int(number), dict(_PRINT.findall(body))


def record(root: str | Path, changes: list[Change], why: str) -> Path:
    """Append this version's section to ``root/verdict_changes.md``: why the rules changed, every rule's
    fingerprint, and each verdict that moved."""
    path = Path(root) / CHANGES
    text = path.read_text() if path.exists() else (
        "# Verdict changes\n\nOne section per version of the rule book (`headlab.rulebook`): why its rules changed, "
        "the fingerprint of every rule (its declared text and its decision's source), and each committed verdict "
        "that moved when `headlab verdicts --record` re-judged the results. A unit test fails when the rule book's "
        "fingerprints differ from the latest section's.\n")
    number, _ = recorded_fingerprints(text)
    if number >= VERSION:
        raise ValueError(f"{path} already has a section for version {number}: bump rulebook.book.VERSION first")
    lines = ["", f"## Version {VERSION}", "", why, "", "| rule | fingerprint |", "|---|---|"]
    lines += [f"| `{rid}` | `{fp}` |" for rid, fp in fingerprints().items()]
    lines += ["", "| result | row | rule | old verdict | new verdict | why (the rule's power statement) |",
              "|---|---|---|---|---|---|"]
    lines += [f"| `{c.where}` | {c.row} | `{c.rule}` | {c.old} | {c.new} | {c.why or '-'} |" for c in changes]
    if not changes:
        lines.append("| - | no verdict moved | | | | |")
    write_text_atomic(path, text.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
    return path


__all__ = ["CHANGES", "Change", "record", "recorded_fingerprints", "rejudge_all"]
