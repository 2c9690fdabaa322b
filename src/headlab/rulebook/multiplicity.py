"""Multiplicity: the verdicts of one rule in a table are one family of tests, corrected by the family its rule
declares (:class:`headlab.rulebook.book.Family`):

* ``rows``: a "supported" must survive Holm's correction among the rule's rows (Holm 1979: the i-th smallest of m
  p-values is held to 0.05 / (m - i + 1), stepping down until one fails). A rule whose decision is an interval, not
  a test with a p-value, gives no p to correct: in a family of more than one its "supported" cannot be shown to
  survive, so it reads inconclusive and says why.
* ``every``: the claim must hold in every row (every model of a claims table, every recipe): one
  intersection-union test, whose level is that of each row (Berger 1982), so no row is corrected; a row reads as
  one part of the claim, not as a claim of its own.
* ``describes``: an estimate against the range a claim states; a description, not a test, in no family.

Different rules are different claims of the documents, each its own family: a table is not corrected across
them. Verdicts that are "not measured" or "n/a" tested nothing and are in no family."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from headlab.rulebook.book import BOOK, Family

ALPHA = 0.05
OUT_OF_FAMILY = ("not measured", "n/a")


def family(records: Sequence[Mapping[str, Any]]) -> int:
    """How many tests a table ran: its verdicts that tested something."""
    return sum(str(r.get("verdict")) not in OUT_OF_FAMILY for r in records)


def family_of(rule: str | None) -> Family:
    """A rule's declared family (a record without a rule, or of a rule the book lacks: its rows, the strictest)."""
    return BOOK[rule].family if rule is not None and rule in BOOK else Family.ROWS


def _survivors(records: Sequence[Mapping[str, Any]], members: list[int], alpha: float) -> set[int]:
    """Holm's step-down over ``members`` (indices of tested records of one family); a record without a p is held
    to the bound it is known to meet (p below ``alpha``), which survives only a family of one."""
    m = len(members)
    order = sorted(members, key=lambda i: (records[i].get("p") is None, records[i].get("p") or alpha))
    survives: set[int] = set()
    for rank, i in enumerate(order):
        p = records[i].get("p")
        if m > 1 and (p is None or not p < alpha / (m - rank)):
            break
        survives.add(i)
    return survives


def surviving(ps: Sequence[float | None], alpha: float = ALPHA) -> set[int]:
    """Which of one family's tests, by their p-values (None: no p), survive Holm's step-down (:func:`holm`'s)."""
    return _survivors([{"p": p} for p in ps], list(range(len(ps))), alpha)


def holm(records: Sequence[Mapping[str, Any]], alpha: float = ALPHA) -> list[dict[str, Any]]:
    """The records (each with ``rule``, ``verdict``, ``reason`` and, where its rule gives one, ``p``) with every
    "supported" that does not survive its rule's family turned inconclusive, its reason saying so; the others
    unchanged."""
    groups: dict[Any, list[int]] = {}
    for i, r in enumerate(records):
        if str(r.get("verdict")) not in OUT_OF_FAMILY:
            groups.setdefault(r.get("rule"), []).append(i)
    survives: set[int] = set()
    for rule, members in groups.items():
        corrected = family_of(rule) == Family.ROWS
        survives |= _survivors(records, members, alpha) if corrected else set(members)
    out = []
    for i, r in enumerate(records):
        r = dict(r)
        if str(r.get("verdict")) == "supported" and i not in survives:
            m = len(groups[r.get("rule")])
            why = "no p-value to correct" if r.get("p") is None else f"p = {r['p']:.3g}"
            r.update(verdict="inconclusive",
                     reason=f"does not survive Holm's correction over its rule's {m} tests ({why})")
        out.append(r)
    return out


def stated(records: Sequence[Mapping[str, Any]]) -> str:
    """The sentence a table prints under itself: its tests, and each rule's family."""
    counts: dict[str, int] = {}
    for r in records:
        if str(r.get("verdict")) not in OUT_OF_FAMILY:
            counts[r.get("rule") or "?"] = counts.get(r.get("rule") or "?", 0) + 1
    fams = "; ".join(f"`{rule}` {n} ({_said(family_of(rule), n)})" for rule, n in counts.items())
    return (f"Multiplicity: this table ran {family(records)} tests; each rule's are one family "
            f"(`headlab.rulebook.multiplicity`): {fams or 'none'}.")


def _said(kind: Family, n: int) -> str:
    if kind == Family.EVERY:
        return "every one must hold: an intersection-union test, each at 0.05"
    if kind == Family.DESCRIBES:
        return "an estimate against a stated range, not a test"
    return "Holm's correction at 0.05" if n > 1 else "one test at 0.05"


__all__ = ["ALPHA", "family", "family_of", "holm", "stated", "surviving"]
