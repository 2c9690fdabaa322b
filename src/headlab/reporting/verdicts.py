"""Every committed verdict re-judged by the current rule book (``headlab verdicts``): the claims tables, the
formation claims, the induction study and the monitor evaluations from the statistics they keep, the retrieval
table from its result files. A rule's own commit runs this, and the verdicts that moved are added to the ledger
(:mod:`headlab.reporting.ledger`) under the book's version."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from headlab.errors import HeadlabError
from headlab.formation.claims import FormationClaimsResult
from headlab.formation.induce.study import InduceResult
from headlab.integrity import verified
from headlab.monitor.comparison import EvaluationResult
from headlab.notices import say
from headlab.result import linked_folders, read_json
from headlab.retrieval import verdicts as retrieval_verdicts
from headlab.retrieval.verdicts import RetrievalVerdictsResult
from headlab.rulebook import BOOK, VERSION, registration
from headlab.rulebook.book import now
from headlab.rulebook.registration import verdict_rows
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


class Verdicts(Protocol):
    """A result that keeps verdicts: each by name, with its rule, label and power statement."""

    def verdicts(self) -> dict[str, tuple[str, str, str]]: ...


class Judged(Verdicts, Protocol):
    """A result that keeps its verdicts with the statistics they were judged from."""

    KIND: ClassVar[str]

    def rejudged(self) -> Judged: ...

    def to_json(self) -> dict[str, Any]: ...

    def write(self, folder: str | Path) -> Path: ...


def _changes(old: Verdicts | None, new: Verdicts, where: str) -> list[Change]:
    """The verdicts that differ between two judgements of one result (a row new to ``new`` was ``-``; a row that
    ``new`` no longer has, renamed or removed, is now ``-``)."""
    was = old.verdicts() if old is not None else {}
    now = new.verdicts()
    gone = [Change(where, row, rule, verdict, "-", "row renamed or removed")
            for row, (rule, verdict, _) in was.items() if row not in now]
    return gone + [Change(where, row, rule, was[row][1] if row in was else "-", verdict, power)
                   for row, (rule, verdict, power) in now.items() if (was[row][1] if row in was else "-") != verdict]


#: every committed result kind that keeps verdicts with the statistics they were judged from
REJUDGED = (ClaimsResult, FormationClaimsResult, EvaluationResult, InduceResult)


def rejudge_all(root: str | Path) -> list[Change]:
    """Re-judge every committed verdict under ``root`` (``results/``): each result of :data:`REJUDGED` from the
    statistics it keeps, and the retrieval table from its result files (``root/retrieval``); rewrite them and
    return the verdicts that changed."""
    base = Path(root).resolve()
    judged = _judged_files(base)
    changes: list[Change] = []
    for kind in REJUDGED:
        for path in judged[kind]:
            old: Judged = kind.read(path)
            new = registration.judged_as_produced(old)
            new.write(path.parent)
            changes += _changes(old, new, registration.results_path(base, path))
    folder = base / "retrieval"
    if folder.is_dir():
        file = folder / RetrievalVerdictsResult.KIND
        table = retrieval_verdicts.judge(folder)
        old_table = RetrievalVerdictsResult.read(file) if file.exists() else None
        table.write(folder)
        changes += _changes(old_table, table, registration.results_path(base, file))
    return changes


def _judged_files(base: Path) -> dict[type, list[Path]]:
    """Every result under ``base`` that keeps verdicts, by kind, each checked before any is rewritten: refused
    when none is there (nothing to re-judge is not "no verdict moved"), when one was judged by a newer rule book
    (this one would judge it by older rules), or when a verdict names a rule the book does not have; a verdict
    that states a judgement without the statistics it was judged from is refused (:func:`~headlab.rulebook.registration.
    refuse_without_evidence`)."""
    found: dict[type, list[Path]] = {kind: sorted(base.glob(f"**/{kind.KIND}")) for kind in REJUDGED}
    refuse_edited(base, [p for paths in found.values() for p in paths])
    for link in linked_folders(base):  # not followed, as by every reader of results
        say(f"verdicts: {link} is a link to {link.resolve()}; not followed (judge that folder itself)")
    outside = [p for paths in found.values() for p in paths if not p.resolve().is_relative_to(base)]
    if outside:
        raise HeadlabError(f"verdicts: {outside[0]} is a link to {outside[0].resolve()}, outside {base}: a verdict "
                           "is judged where its result lives; copy the file in, or judge its own folder")
    table = base / "retrieval" / RetrievalVerdictsResult.KIND
    files = [p for paths in found.values() for p in paths] + [table] * table.exists()
    if not files and not (base / "retrieval").is_dir():
        raise HeadlabError(f"verdicts: {base} holds no result that keeps verdicts "
                           f"({', '.join(k.KIND for k in REJUDGED)}, retrieval/); give the results folder")
    for path in files:
        rows: list[dict[str, Any]] = []
        verdict_rows(read_json(path), rows)
        where = registration.results_path(base, path)
        registration.refuse_without_evidence(rows, where)
        for row in rows:
            if isinstance(row.get("rulebook"), int) and row["rulebook"] > VERSION:
                raise HeadlabError(f"verdicts: {where} was judged by rule book version {row['rulebook']}, newer than "
                                   f"this headlab's {VERSION}: re-judging would undo its rules; use the headlab "
                                   "that wrote it")
            if row["rule"] not in BOOK:
                raise HeadlabError(f"verdicts: {where} has a verdict by rule {row['rule']!r}, which rule book "
                                   f"version {VERSION} does not have: restore the file, or the rule")
    return found


def refuse_edited(base: Path, tables: list[Path]) -> None:
    """Refused, in one line naming the file, when a table of verdicts or a file of data a rule judges (what its
    ``data`` globs match) was changed after headlab wrote it: nothing is judged from an edited file. The files that
    carry no seal (written before results were sealed) read as committed, and how many is said."""
    files = {p for r in BOOK.values() for g in r.data for p in base.glob(g) if p.is_file()} | set(tables)
    outside = sorted(p for p in files if not p.resolve().is_relative_to(base))
    files -= set(outside)  # named by the caller, which refuses them
    bare = [p for p in sorted(files) if not verified(p, registration.results_path(base, p))]
    if bare:
        say(f"verdicts: {len(bare)} file(s) of data carry no seal (written before results were sealed) and are "
            f"read as committed: {', '.join(registration.results_path(base, p) for p in bare[:2])}"
            f"{' and more' if len(bare) > 2 else ''}")


def _judged_stats(obj: Any, out: dict[str, list[Any]]) -> None:
    """Every (rule, statistics) a result's JSON keeps: rows with a rule and their stats, and the monitor's kinds
    (judged from the AUROCs each kind keeps)."""
    if isinstance(obj, dict):
        if isinstance(obj.get("rule"), str) and isinstance(obj.get("stats"), dict):
            out.setdefault(obj["rule"], []).append(obj["stats"])
        if "auroc" in obj and "best_baseline" in obj:
            out.setdefault("monitor.kind", []).append(kind_stats(obj))
        for v in obj.values():
            _judged_stats(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _judged_stats(v, out)


def declare_rules(root: str | Path) -> list[str]:
    """Declare every rule whose fingerprint is new or changed on the data committed under ``root`` now (the
    files its globs match, the statistics of its committed verdicts): :func:`headlab.rulebook.registration.declare`.
    Returns the rules declared."""
    base = Path(root).resolve()
    refuse_missing(base)
    committed: dict[str, list[Any]] = {}
    for kind in (*REJUDGED, RetrievalVerdictsResult):
        for path in sorted(base.glob(f"**/{kind.KIND}")):
            _judged_stats(read_json(path), committed)
    fps, code = now()
    return registration.declare(fps, {rid: r.data for rid, r in BOOK.items()}, committed, base, VERSION, code)


def refuse_missing(root: Path) -> None:
    """Refused, in one line, when a file of data a rule judges is committed but not there: a declaration made
    without it would not know that its data existed (a folder moved aside while a rule is declared)."""
    missing = registration.tracked_but_missing(root, [g for r in BOOK.values() for g in r.data])
    if missing:
        raise HeadlabError(f"verdicts --record: {missing[0]} (and {len(missing) - 1} more file(s)) is committed but "
                           "not there: a declaration must see every file of data that exists; restore them (git "
                           "checkout -- results) and record again")


def check_declared() -> None:
    """Refused, in one line naming the rule and what moved, when a rule's fingerprint differs from its declaration:
    its code or text changed outside a rule's own commit, and judging by it would move verdicts unseen."""
    moved = registration.moved(*now())
    if moved:
        rid, what = next(iter(moved.items()))
        others = f" (and {len(moved) - 1} other rule(s): {', '.join(list(moved)[1:4])})" if len(moved) > 1 else ""
        raise HeadlabError(f"verdicts: rule {rid} runs code that moved since its declaration ({what}){others}; a "
                           "rule changes only in its own commit: restore the code, or bump "
                           "headlab.rulebook.book.VERSION and run headlab verdicts --record WHY")


def merged(first: list[Change], second: list[Change]) -> list[Change]:
    """The changes of two successive re-judgings as one (old of the first, new of the last), dropping a verdict
    that came back to where it was."""
    out = {(c.where, c.row): c for c in first}
    for c in second:
        was = out.get((c.where, c.row))
        out[c.where, c.row] = c if was is None else Change(c.where, c.row, c.rule, was.old, c.new, c.why)
    return [c for c in out.values() if c.old != c.new]


__all__ = ["REJUDGED", "Change", "check_declared", "declare_rules", "merged", "refuse_edited", "refuse_missing",
           "rejudge_all", "verdict_rows"]
