"""The rule book's contract: a rule is a declared object (the claim in its document's words, the statistic, the
test, the threshold and where it comes from, the null, the least evidence that can support it) with one function
that turns the rule's statistics into a judgement. Every verdict headlab publishes comes from one of these.

The book has a version. A rule's fingerprint covers its declared text and its decision's source, so a rule that
changes is seen: the ledger ``results/verdict_changes.json`` lists the fingerprints of the current version, and a
unit test fails when the book and the ledger disagree (a rule changed without its own commit re-judging the results).
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Callable, Mapping

#: bumped in the commit that changes a rule; every claims, verdicts and evaluation file records it
VERSION = 6


class Verdict(str, Enum):
    """A verdict; why (when it is not the rule's plain outcome) is the judgement's ``reason``."""

    SUPPORTED = "supported"
    NOT_SUPPORTED = "not supported"
    INCONCLUSIVE = "inconclusive"
    NOT_MEASURED = "not measured"
    NA = "n/a"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Judgement:
    """A rule's verdict on one set of statistics: the reason when it is not the rule's plain outcome, and what
    the experiment could have detected (said with every negative and inconclusive verdict)."""

    verdict: Verdict
    reason: str = ""
    power: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"verdict": str(self.verdict), "reason": self.reason, "power": self.power}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Judgement":
        return cls(Verdict(d["verdict"]), d.get("reason", ""), d.get("power", ""))


Decide = Callable[[Mapping[str, Any]], Judgement]


def label(row: Mapping[str, Any]) -> str:
    """A verdict as tables print it: ``inconclusive (1 seed)``, from any record with a verdict and a reason."""
    return f"{row['verdict']}" + (f" ({row['reason']})" if row.get("reason") else "")


@dataclass(frozen=True)
class Rule:
    """One claim's rule. ``origin`` says where the threshold comes from: ``the document``, ``null: ...`` (a
    measured null distribution) or ``ours: ...`` with the reason; ``minimum`` is the least evidence below which
    the rule can only say inconclusive (underpowered)."""

    id: str
    document: str          # which research document states the claim
    claim: str             # the claim in the document's words
    statistic: str
    test: str
    threshold: str
    origin: str
    null: str
    minimum: str
    decide: Decide = field(compare=False)

    def judge(self, stats: Mapping[str, Any] | None) -> Judgement:
        """The verdict on ``stats``; ``None`` means the experiment was not run."""
        if stats is None:
            return Judgement(Verdict.NOT_MEASURED)
        return self.decide(stats)

    def fingerprint(self) -> str:
        """sha256 (12 hex digits) of the declared text and the decision's source."""
        text = "\n".join(str(getattr(self, f.name)) for f in fields(self) if f.name != "decide")
        text += "\n" + inspect.getsource(self.decide)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


#: rule id -> rule, in declaration order (the order of the docs' rule table)
BOOK: dict[str, Rule] = {}


def declare(rule: Rule) -> Rule:
    if rule.id in BOOK:
        raise ValueError(f"rule {rule.id!r} is declared twice")
    BOOK[rule.id] = rule
    return rule


def judge(rule_id: str, stats: Mapping[str, Any] | None) -> dict[str, Any]:
    """A verdict record: the rule, the book's version, the judgement and the statistics it read."""
    j = BOOK[rule_id].judge(stats)
    return {"rule": rule_id, "rulebook": VERSION, **j.to_json(), "stats": dict(stats) if stats else None}


def fingerprints() -> dict[str, str]:
    return {rid: r.fingerprint() for rid, r in BOOK.items()}
