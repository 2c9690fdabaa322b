"""Every committed verdict re-judged by the current rule book (``headlab verdicts``): the claims tables, the
formation claims, the induction study and the monitor evaluations from the statistics they keep, the retrieval
table from its result files. A rule's own commit runs this, and the verdicts that moved are added to the ledger
(:mod:`headlab.reporting.ledger`) under the book's version."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from headlab.formation.claims import FormationClaimsResult
from headlab.formation.induce.study import InduceResult
from headlab.monitor.comparison import EvaluationResult
from headlab.retrieval import verdicts as retrieval_verdicts
from headlab.retrieval.verdicts import RetrievalVerdictsResult
from headlab.rulebook import BOOK, label
from headlab.rulebook.slash import kind_stats
from headlab.study.claims import ClaimsResult


@dataclass(frozen=True)
class Change:
    where: str
    row: str
    rule: str
    old: str
    new: str
    why: str


def _claims_changes(path: Path, where: str) -> list[Change]:
    old = ClaimsResult.read(path)
    before = {(m.model, cid): label(row) for m in old.models for cid, row in m.rows.items()}
    before[("*", 7)] = label(old.cross)
    new = old.rejudged()
    new.write(path.parent)
    after = {(m.model, cid): (row, label(row)) for m in new.models for cid, row in m.rows.items()}
    after[("*", 7)] = (new.cross, label(new.cross))
    return [Change(where, f"claim {cid} on {model}", row.get("rule", ""), before.get((model, cid), "-"), label,
                   row.get("power", "")) for (model, cid), (row, label) in after.items()
            if before.get((model, cid)) != label]


def _formation_changes(path: Path, where: str) -> list[Change]:
    old = FormationClaimsResult.read(path)
    new = old.rejudged()
    new.write(path.parent)
    return [Change(where, f"{r['claim']} ({old.metric})", r["rule"], label(o), label(r), r.get("power", ""))
            for o, r in zip(old.rows, new.rows) if label(o) != label(r)]


def _monitor_changes(path: Path, where: str) -> list[Change]:
    old = EvaluationResult.read(path)
    new = old.rejudged()
    new.write(path.parent)
    return [Change(where, f"kind {k} on {old.model}", "monitor.kind", old.kinds[k]["verdict"], r["verdict"],
                   BOOK["monitor.kind"].judge(kind_stats(r)).power)
            for k, r in new.kinds.items() if old.kinds[k]["verdict"] != r["verdict"]]


def _induce_changes(path: Path, where: str) -> list[Change]:
    old = InduceResult.read(path)
    new = old.rejudged()
    new.write(path.parent)
    return [Change(where, f"arm {arm}", "formation.foster", label(old.summary[arm]), label(r), r.get("power", ""))
            for arm, r in new.summary.items() if label(old.summary[arm]) != label(r)]


def _retrieval_changes(folder: Path, where: str) -> list[Change]:
    old_file = folder / RetrievalVerdictsResult.KIND
    before = {r["row"]: label(r) for r in RetrievalVerdictsResult.read(old_file).rows} if old_file.exists() else {}
    table = retrieval_verdicts.judge(folder)
    table.write(folder)
    return [Change(where, r["row"], r["rule"], before.get(r["row"], "-"), label(r), r["power"]) for r in table.rows
            if before.get(r["row"]) != label(r)]


#: every committed result that keeps verdicts, by its file, and how it is judged again from the statistics it keeps
REJUDGED: dict[str, Callable[[Path, str], list[Change]]] = {
    ClaimsResult.KIND: _claims_changes,
    FormationClaimsResult.KIND: _formation_changes,
    EvaluationResult.KIND: _monitor_changes,
    InduceResult.KIND: _induce_changes,
}


def rejudge_all(root: str | Path) -> list[Change]:
    """Re-judge every committed verdict under ``root`` (``results/``): each result of :data:`REJUDGED` from the
    statistics it keeps, and the retrieval table from its result files (``root/retrieval``); rewrite them and
    return the verdicts that changed."""
    base = Path(root).resolve()
    changes: list[Change] = []
    for kind, judge_again in REJUDGED.items():
        for path in sorted(base.glob(f"**/{kind}")):
            changes += judge_again(path, str(path.relative_to(base.parent)))
    if (base / "retrieval").is_dir():
        folder = base / "retrieval"
        changes += _retrieval_changes(folder, str((folder / RetrievalVerdictsResult.KIND).relative_to(base.parent)))
    return changes


__all__ = ["REJUDGED", "Change", "rejudge_all"]
