"""Every committed verdict re-judged by the current rule book (``headlab verdicts``): the claims tables from the
statistics their rows keep, the retrieval table from its result files. A rule's own commit runs this, and the
verdicts that moved are added to the ledger (:mod:`headlab.reporting.ledger`) under the book's version."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from headlab.result import read_json
from headlab.retrieval import verdicts as retrieval_verdicts
from headlab.retrieval.verdicts import RetrievalVerdictsResult
from headlab.rulebook import label
from headlab.study.claims import ClaimsResult, rejudge


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
    old_file = folder / RetrievalVerdictsResult.KIND
    before = {r["row"]: label(r) for r in RetrievalVerdictsResult.read(old_file).rows} if old_file.exists() else {}
    table = retrieval_verdicts.judge(folder)
    table.write(folder)
    where = str(old_file.relative_to(root.parent))
    return [Change(where, r["row"], r["rule"], before.get(r["row"], "-"), label(r), r["power"]) for r in table.rows
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


__all__ = ["Change", "rejudge_all"]
