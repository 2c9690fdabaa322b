"""The rule book calibrated like an instrument: for every rule, a planted true effect that must read "supported" and
a null that must not, generated at the evidence the rule declares (its placebos, control draws, seeds or runs) and
judged by the rule's own decision and by Holm's correction at a family size.

A control is registered beside the rules of its document (:mod:`.slash`, :mod:`.formation`, :mod:`.retrieval`), as
rules are: ``level`` says how much of the real path its data take. ``data``: the control makes raw measurements
(per-sample `/` masses, trajectories, detector scores, success tables) and the rule's statistic is computed from them
by headlab's own code (the strict rule, the placebo counts, the segment fits, the AUROC and its paired bootstrap, the
permutation and Fisher tests); ``statistics``: the control makes the statistic's parts directly, where the real path
needs a trained model per draw (stated in the table).

:func:`calibrate` gives, per rule, the share of planted draws that read supported (power) and of null draws that read
supported (false-positive rate), alone and in a family of ``m`` tests: a "supported" must then survive Holm's
correction (:func:`headlab.rulebook.multiplicity.holm`) with the other ``m - 1`` tests drawn from the null.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from headlab.display import count
from headlab.io import write_text_atomic
from headlab.result import Result
from headlab.rulebook import BOOK, Verdict
from headlab.rulebook.multiplicity import ALPHA, holm

Stats = Mapping[str, Any]
Draw = Callable[[np.random.Generator], Stats]
POWER = 0.8  # the power a calibrated rule has on its planted effect (the conventional 80%)
#: where a results folder keeps the calibration table
TABLE_FOLDER = Path("rulebook") / "calibration"


@dataclass(frozen=True)
class Control:
    """A rule's calibration: ``planted`` draws statistics of data with the claimed effect, ``null`` of data without
    it, both at ``evidence`` (what the rule declares it needs, in words); ``effect`` and ``nothing`` say what was
    planted and what the null is; ``level``: ``data`` or ``statistics`` (module docstring); ``draws``: how many of
    each the committed table takes (a slow control takes fewer); ``ci``: whether the test suite runs it (a control
    whose draw trains nothing but fits many trajectories is left to the committed table). ``at``, where the
    evidence has a size: the planted and null draws at ``n`` units of it (``unit``), tried over ``grid`` to find
    the evidence the rule would need to be calibrated (:func:`needed`)."""

    rule: str
    evidence: str
    effect: str
    nothing: str
    planted: Draw
    null: Draw
    level: str = "data"
    draws: int = 200
    ci: bool = True
    at: Callable[[int], tuple[Draw, Draw]] | None = None
    unit: str = ""
    grid: tuple[int, ...] = ()


#: rule id -> its control, in the rule book's order once every document's controls are imported
CONTROLS: dict[str, Control] = {}


def control(c: Control) -> Control:
    if c.rule not in BOOK:
        raise ValueError(f"control for {c.rule!r}, which the rule book does not have")
    if c.rule in CONTROLS:
        raise ValueError(f"rule {c.rule!r} has two controls")
    if c.level not in ("data", "statistics"):
        raise ValueError(f"control {c.rule!r}: level {c.level!r} is not data or statistics")
    CONTROLS[c.rule] = c
    return c


def _record(rule: str, stats: Stats) -> dict[str, Any]:
    j = BOOK[rule].decide(stats)  # the decision alone: a control's draw is new data, never exploratory
    return {"rule": rule, "verdict": str(j.verdict), "reason": j.reason, "p": j.p}


def supported(rule: str, draw: Draw, rng: np.random.Generator, family: int, null: Draw) -> bool:
    """Whether one draw reads supported after Holm's correction among ``family`` tests, the other ``family - 1``
    drawn from the rule's null (drawn only where they can matter: a draw that does not read supported alone, or
    that gives no p in a family of more than one, cannot survive whatever they are)."""
    first = _record(rule, draw(rng))
    if first["verdict"] != str(Verdict.SUPPORTED) or family == 1:
        return first["verdict"] == str(Verdict.SUPPORTED)
    if first["p"] is None:
        return False
    records = [first] + [_record(rule, null(rng)) for _ in range(family - 1)]
    return holm(records)[0]["verdict"] == str(Verdict.SUPPORTED)


@dataclass(frozen=True)
class Calibration:
    """One rule's calibration: power and false-positive rate over ``draws`` draws each, at family size ``family``,
    with the smallest p any planted draw reached (None where the rule gives no p)."""

    rule: str
    family: int
    draws: int
    power: float
    false_positive: float
    smallest_p: float | None


def calibrate(c: Control, family: int, draws: int | None, seed: int) -> Calibration:
    """``c``'s rule on ``draws`` planted and ``draws`` null draws (seeded), at family size ``family``."""
    n = c.draws if draws is None else draws
    rng = np.random.default_rng([seed, family])
    hits = [supported(c.rule, c.planted, rng, family, c.null) for _ in range(n)]
    false = [supported(c.rule, c.null, rng, family, c.null) for _ in range(n)]
    ps = [p for p in (_record(c.rule, c.planted(rng))["p"] for _ in range(min(n, 20))) if p is not None]
    return Calibration(c.rule, family, n, float(np.mean(hits)), float(np.mean(false)), min(ps) if ps else None)


def beta(rng: np.random.Generator, mean: float | np.ndarray, size: Any, strength: float = 12.0) -> np.ndarray:
    """Draws in (0, 1) of the given mean (a share of attention, a mass): Beta(mean·s, (1 - mean)·s)."""
    m = np.clip(mean, 1e-3, 1 - 1e-3)
    return rng.beta(m * strength, (1 - m) * strength, size=size)


def registered() -> dict[str, Control]:
    """Every document's controls (importing them registers them)."""
    from headlab.calibration import formation, retrieval, slash  # noqa: F401

    return CONTROLS


def reachable(c: Calibration, family: int) -> str:
    """Whether a rule can read supported in a family of ``family`` tests at its evidence: the smallest p its planted
    draws reached against Holm's first bound (0.05 / family), or why it cannot."""
    if family == 1:
        return "yes (a family of one)"
    if c.smallest_p is None:
        return f"no: it gives no p, and a family of {family} needs one"
    bound = ALPHA / family
    return (f"yes (p {c.smallest_p:.2g} < {bound:.2g})" if c.smallest_p < bound else
            f"no: its smallest p {c.smallest_p:.2g} is not below {bound:.2g}")


@dataclass
class CalibrationResult(Result):
    """``calibration.json``: every rule's power on its planted effect and false-positive rate on its null, alone
    and in the family its committed verdicts are corrected in."""

    KIND = "calibration.json"
    COMPANIONS = ("calibration.md",)
    seed: int
    rows: list[dict[str, Any]]

    def markdown(self) -> str:
        lines = ["# The rule book's calibration", "",
                 "Each rule on draws of a planted true effect (power: the share read supported) and of a null (the "
                 f"share read supported: the false-positive rate, to be at most {ALPHA}), at the evidence it "
                 "declares; alone, and in the family its committed verdicts are corrected in (Holm's correction "
                 "with the other tests drawn from the null; the family each rule declares, `headlab.rulebook."
                 "multiplicity`). A rule is calibrated where its power alone and in its "
                 f"family is at least {POWER} and its false-positive rate at most {ALPHA}; \"calibrated from\": "
                 "for a rule that is not, the smallest evidence (of the sizes tried) at which the same planted "
                 "effect and null would calibrate it, or that none tried does (a rule that asks every run to agree "
                 "can lose power as evidence grows). `headlab.calibration`; "
                 f"seed {self.seed}.", "",
                 "| rule | level | evidence | planted | null | draws | power alone | false positives | family | "
                 "power in family | can reach supported in its family | were its whole table one family | "
                 "calibrated | calibrated from |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in self.rows:
            lines.append(f"| `{r['rule']}` | {r['level']} | {r['evidence']} | {r['effect']} | {r['nothing']} | "
                         f"{r['draws']} | {r['power']:.2f} | {r['false_positive']:.3f} | {r['family']} | "
                         f"{r['family_power']:.2f} | {r['reachable']} | {count(r['table'], 'test')}: "
                         f"{r['reachable_in_table']} | {'yes' if r['calibrated'] else 'no'} | "
                         f"{'at its evidence' if r['calibrated'] else r.get('needs') or '(not searched)'} |")
        return "\n".join(lines) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "calibration.md", self.markdown())


def calibration_row(c: Control, family: int, seed: int, draws: int | None = None, table: int = 1
                    ) -> dict[str, Any]:
    """One rule's row of the table: alone and at ``family``; ``table``: the whole table it sits in, said as whether
    the rule could reach supported if the table were one family."""
    alone = calibrate(c, 1, draws, seed)
    within = calibrate(c, family, draws, seed) if family > 1 else alone
    ok = min(alone.power, within.power) >= POWER and max(alone.false_positive, within.false_positive) <= ALPHA
    return {"rule": c.rule, "level": c.level, "evidence": c.evidence, "effect": c.effect, "nothing": c.nothing,
            "draws": alone.draws, "power": alone.power, "false_positive": alone.false_positive, "family": family,
            "family_power": within.power, "family_false_positive": within.false_positive,
            "smallest_p": alone.smallest_p, "reachable": reachable(alone, family), "table": table,
            "reachable_in_table": reachable(alone, table), "calibrated": ok,
            "needs": None if ok else needed(c, family, seed, draws), "fingerprint": BOOK[c.rule].fingerprint()}


def needed(c: Control, family: int, seed: int, draws: int | None = None) -> str:
    """The smallest evidence in ``c.grid`` at which the rule is calibrated (power alone and in its family at least
    :data:`POWER`, false positives at most its alpha), said in ``c.unit``; or that none in the grid is, or that the
    control cannot vary its evidence. Where a rule decides by "every run", more evidence can lower its power: the
    answer says what the rule would need, not what a study should run."""
    if c.at is None:
        return "its evidence has no size to vary"
    for n in c.grid:
        planted, null = c.at(n)
        sized = replace(c, planted=planted, null=null)
        alone = calibrate(sized, 1, draws, seed)
        within = calibrate(sized, family, draws, seed) if family > 1 else alone
        if min(alone.power, within.power) >= POWER and max(alone.false_positive, within.false_positive) <= ALPHA:
            return f"{n:,} {c.unit} (power {alone.power:.2f} alone, {within.power:.2f} in its family)"
    return f"none up to {c.grid[-1]:,} {c.unit}"


def declarable(table: CalibrationResult, fingerprints: Mapping[str, str]) -> list[str]:
    """Why a rule of the book may not be declared on this calibration: it has no row, its row calibrated an earlier
    version of the rule (another fingerprint), it cannot reach supported in its family at its evidence (raise its
    evidence, declare a smaller family or give it a test), or it can but misses the power or the false-positive rate
    of a calibrated rule there (declare the evidence the table says it needs). Empty when every rule may be."""
    rows = {r["rule"]: r for r in table.rows}
    out = []
    for rid, fp in fingerprints.items():
        r = rows.get(rid)
        if r is None:
            out.append(f"{rid} has no calibration")
        elif r.get("fingerprint") != fp:
            out.append(f"{rid}'s calibration is of another version of the rule (recalibrate it)")
        elif r["reachable"].startswith("no"):
            out.append(f"{rid} cannot reach supported in its family of {r['family']} ({r['reachable']})")
        elif not r["calibrated"]:
            out.append(f"{rid} is not calibrated at the evidence it declares (power {r['power']:.2f} alone, "
                       f"{r['family_power']:.2f} in its family, false positives {r['false_positive']:.3f}): declare "
                       f"the evidence it needs, {r.get('needs') or 'not searched'}")
    return out


__all__ = ["CONTROLS", "Calibration", "CalibrationResult", "Control", "beta", "calibrate", "calibration_row",
           "control", "declarable", "needed", "reachable", "registered", "supported", "TABLE_FOLDER"]
