"""Every committed verdict re-judged by the current rule book (``headlab verdicts``): the claims tables, the
formation claims, the induction study and the monitor evaluations from the statistics they keep, the retrieval
table from its result files. A rule's own commit runs this, and the verdicts that moved are added to the ledger
(:mod:`headlab.reporting.ledger`) under the book's version."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from headlab.formation.claims import FormationClaimsResult
from headlab.formation.induce.study import InduceResult
from headlab.monitor.comparison import EvaluationResult
from headlab.retrieval import verdicts as retrieval_verdicts
from headlab.retrieval.verdicts import RetrievalVerdictsResult
from headlab.study.claims import ClaimsResult


@dataclass(frozen=True)
class Change:
    where: str
    row: str
    rule: str
    old: str
    new: str
    why: str


class Verdicts(Protocol):
    """A result that keeps verdicts: each by name, with its rule, label and power statement."""

    def verdicts(self) -> dict[str, tuple[str, str, str]]: ...


class Judged(Verdicts, Protocol):
    """A result that keeps its verdicts with the statistics they were judged from."""

    def rejudged(self) -> Judged: ...

    def write(self, folder: str | Path) -> Path: ...


def _changes(old: Verdicts | None, new: Verdicts, where: str) -> list[Change]:
    """The verdicts that differ between two judgements of one result (a row new to ``new`` was ``-``)."""
    before = {row: now for row, (_, now, _) in old.verdicts().items()} if old is not None else {}
    return [Change(where, row, rule, before.get(row, "-"), now, power)
            for row, (rule, now, power) in new.verdicts().items() if before.get(row, "-") != now]


#: every committed result kind that keeps verdicts with the statistics they were judged from
REJUDGED = (ClaimsResult, FormationClaimsResult, EvaluationResult, InduceResult)


def rejudge_all(root: str | Path) -> list[Change]:
    """Re-judge every committed verdict under ``root`` (``results/``): each result of :data:`REJUDGED` from the
    statistics it keeps, and the retrieval table from its result files (``root/retrieval``); rewrite them and
    return the verdicts that changed."""
    base = Path(root).resolve()
    changes: list[Change] = []
    for kind in REJUDGED:
        for path in sorted(base.glob(f"**/{kind.KIND}")):
            old: Judged = kind.read(path)
            new = old.rejudged()
            new.write(path.parent)
            changes += _changes(old, new, str(path.relative_to(base.parent)))
    folder = base / "retrieval"
    if folder.is_dir():
        file = folder / RetrievalVerdictsResult.KIND
        table = retrieval_verdicts.judge(folder)
        old_table = RetrievalVerdictsResult.read(file) if file.exists() else None
        table.write(folder)
        changes += _changes(old_table, table, str(file.relative_to(base.parent)))
    return changes


__all__ = ["REJUDGED", "Change", "rejudge_all"]
