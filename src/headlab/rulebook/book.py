"""The rule book's contract: a rule is a declared object (the claim in its document's words, the statistic, the
test, the threshold and where it comes from, the null, the least evidence that can support it) with one function
that turns the rule's statistics into a judgement. Every verdict headlab publishes comes from one of these.

The book has a version. A rule's fingerprint covers everything that decides it: its declared text and everything
it runs, its decision and the functions that compute its statistic, target and baselines (``computed_by``) with
every headlab function, class and module-level constant they reach (:mod:`headlab.rulebook.reach`), so a rule that
changes, or a helper or threshold it reads, is seen: the ledger ``results/verdict_changes.json`` lists the
fingerprints of the current version, a unit test fails when the book and the ledger disagree, and
``headlab verdicts`` refuses to judge by a rule whose code moved since its declaration.

Pre-registration is enforced, not promised: when a rule is declared (or changed), its own commit records what data
already existed (:mod:`headlab.rulebook.registration`). A verdict on data that existed when its rule was declared is
**exploratory**: it says so, and it cannot read "supported". Only data that first exists after the declaration (new
seeds, new runs, new models) can confirm a rule.
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any, Callable, Iterable, Mapping

from headlab.rulebook import reach, registration

#: bumped in the commit that changes a rule; every claims, verdicts and evaluation file records it
VERSION = 32


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
    exploratory: bool = False  # its rule was declared after the data it judges
    p: float | None = None     # the test's p-value, where the rule's decision is a test (for Holm's correction)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": str(self.verdict), "reason": self.reason, "power": self.power}
        if self.exploratory:
            out["exploratory"] = True
        if self.p is not None:
            out["p"] = self.p
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Judgement":
        return cls(Verdict(d["verdict"]), d.get("reason", ""), d.get("power", ""), bool(d.get("exploratory")),
                   d.get("p"))


Decide = Callable[[Mapping[str, Any]], Judgement]


EXPLORATORY = "exploratory: its rule was declared after this data"


def label(row: Mapping[str, Any]) -> str:
    """A verdict as tables print it: ``inconclusive (1 seed)``, from any record with a verdict and a reason; an
    exploratory verdict says so first."""
    text = f"{row['verdict']}" + (f" ({row['reason']})" if row.get("reason") else "")
    return f"exploratory · {text}" if row.get("exploratory") else text


class Family(str, Enum):
    """How a rule's verdicts in one table are corrected for multiplicity (:mod:`headlab.rulebook.multiplicity`)."""

    ROWS = "rows"            # the rule's rows in a table are one family: Holm's correction within them
    EVERY = "every"          # the claim must hold in every row (every model, every recipe): an intersection-union
    #                          test, each row at 0.05 (Berger 1982), and a row reads as one part of it
    DESCRIBES = "describes"  # an estimate against the range a claim states: a description, in no family

    def __str__(self) -> str:
        return self.value


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
    #: dotted names of the functions that compute its statistic, choose its target and fit its baselines
    computed_by: tuple[str, ...] = ()
    #: globs under results/ of the committed files whose data it judges (hashed when it is declared)
    data: tuple[str, ...] = ()
    #: how its verdicts in one table are corrected for multiplicity
    family: Family = Family.ROWS

    def judge(self, stats: Mapping[str, Any] | None, evidence: Iterable[str] = ()) -> Judgement:
        """The verdict on ``stats``; ``None`` means the experiment was not run. ``evidence``: the sha256 of the
        files the statistics were computed from, where the caller knows them. A verdict on data that existed
        when the rule was declared (the same statistics, or one of the same files) is exploratory, and an
        exploratory "supported" reads inconclusive."""
        if stats is None:
            return Judgement(Verdict.NOT_MEASURED)
        j = self.decide(stats)
        if j.verdict in (Verdict.NA, Verdict.NOT_MEASURED) or not registration.is_exploratory(self.id, stats,
                                                                                               evidence):
            return j  # a row that tested nothing has nothing to be exploratory about
        if j.verdict == Verdict.SUPPORTED:
            return replace(j, verdict=Verdict.INCONCLUSIVE, exploratory=True,
                           reason=EXPLORATORY + " (the statistic alone would read supported)")
        return replace(j, exploratory=True)

    def __reach__(self) -> str:
        """How a rule appears in another rule's closure: by its id (its own fingerprint covers its parts), so a
        function that reads the book does not take in every rule's code."""
        return f"<rule {self.id}>"

    def code(self, memo: dict[int, Any] | None = None) -> dict[str, str]:
        """Everything the rule runs, each part with its digest: :func:`headlab.rulebook.reach.reached` from its
        decision and every function in ``computed_by``."""
        return reach.reached([self.decide, *(resolve(name) for name in self.computed_by)], memo)

    def fingerprint(self, memo: dict[int, Any] | None = None, code: dict[str, str] | None = None) -> str:
        """sha256 (12 hex digits) of the declared text and of everything the rule runs (:meth:`code`, or ``code``
        where the caller has read it): its decision, the functions that compute its statistics, and every headlab
        function, class and module-level value they reach."""
        text = "\n".join(str(getattr(self, f.name)) for f in fields(self) if f.name != "decide")
        text += "".join(f"\n{name} {digest}" for name, digest in (code or self.code(memo)).items())
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def resolve(dotted: str) -> Any:
    """The object a dotted name (``package.module.function`` or ``...Class.method``) names."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ValueError(f"{dotted!r} names no importable object")


class Book(dict[str, Rule]):
    """The registry of rules. A function that looks a rule up in it reaches that rule, whose own fingerprint covers
    it, so the book appears in a closure by name: declaring a new rule does not move the others."""

    def __reach__(self) -> str:
        return "<the rule book>"


#: rule id -> rule, in declaration order (the order of the docs' rule table)
BOOK: Book = Book()


def declare(rule: Rule) -> Rule:
    if rule.id in BOOK:
        raise ValueError(f"rule {rule.id!r} is declared twice")
    BOOK[rule.id] = rule
    return rule


def judge(rule_id: str, stats: Mapping[str, Any] | None, evidence: Iterable[str] = ()) -> dict[str, Any]:
    """A verdict record: the rule, the book's version, the judgement and the statistics it read (``evidence``:
    :meth:`Rule.judge`)."""
    j = BOOK[rule_id].judge(stats, evidence)
    return {"rule": rule_id, "rulebook": VERSION, **j.to_json(), "stats": dict(stats) if stats else None}


def now() -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Every rule's fingerprint and :meth:`Rule.code`, each closure read once."""
    memo: dict[int, Any] = {}
    code = {rid: r.code(memo) for rid, r in BOOK.items()}
    return {rid: r.fingerprint(code=code[rid]) for rid, r in BOOK.items()}, code


def fingerprints() -> dict[str, str]:
    return now()[0]
