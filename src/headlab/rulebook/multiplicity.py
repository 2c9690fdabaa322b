"""Multiplicity: a table's verdicts are one family of tests, and a "supported" verdict must survive Holm's
correction within it (Holm 1979: the i-th smallest of m p-values is held to 0.05 / (m - i + 1), stepping down
until one fails). A rule whose decision is an interval, not a test with a p-value, gives no p to correct: in a
family of more than one test its "supported" cannot be shown to survive, so it reads inconclusive and says why.
Verdicts that are "not measured" or "n/a" tested nothing and are not in the family."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

ALPHA = 0.05
OUT_OF_FAMILY = ("not measured", "n/a")


def family(records: Sequence[Mapping[str, Any]]) -> int:
    """How many tests a table ran: its verdicts that tested something."""
    return sum(str(r.get("verdict")) not in OUT_OF_FAMILY for r in records)


def holm(records: Sequence[Mapping[str, Any]], alpha: float = ALPHA) -> list[dict[str, Any]]:
    """The records (each with ``verdict``, ``reason`` and, where its rule gives one, ``p``) with every
    "supported" that does not survive Holm's correction over the family turned inconclusive, its reason saying
    so; the others unchanged. ``holm`` on the family's own p-values only: a record without one is held to the
    bound it is known to meet (p below ``alpha``), which survives only a family of one."""
    m = family(records)
    tested = [i for i, r in enumerate(records) if str(r.get("verdict")) not in OUT_OF_FAMILY]
    order = sorted(tested, key=lambda i: (records[i].get("p") is None, records[i].get("p") or alpha))
    survives: set[int] = set()
    for rank, i in enumerate(order):
        p = records[i].get("p")
        if m > 1 and (p is None or not p < alpha / (m - rank)):
            break
        survives.add(i)
    out = []
    for i, r in enumerate(records):
        r = dict(r)
        if str(r.get("verdict")) == "supported" and i not in survives:
            why = "no p-value to correct" if r.get("p") is None else f"p = {r['p']:.3g}"
            r.update(verdict="inconclusive", reason=f"does not survive Holm's correction over {m} tests ({why})")
        out.append(r)
    return out


def stated(records: Sequence[Mapping[str, Any]]) -> str:
    """The sentence a table prints under itself: its family and the correction."""
    return (f"Multiplicity: this table is one family of {family(records)} tests; a verdict reads supported only "
            "if it survives Holm's correction at 0.05 within the family (`headlab.rulebook.multiplicity`).")


__all__ = ["ALPHA", "family", "holm", "stated"]
