"""The claims of the slash-dominance write-up and the rules that judge them (each claim's own number appears
only here).

* a claimed *range* [a, b] is ``supported`` when the estimate lies in it, ``not supported`` when the whole
  interval lies outside it, else ``inconclusive``;
* a claimed *bound* (ours where the write-up gives none, labelled so) is ``supported`` when the whole interval
  is on the claimed side, ``not supported`` when the whole interval is on the other side, else ``inconclusive``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from headlab.census.stats import Interval

CONVENTIONS = ("Claim 1 counts the heads that pass the strict rule on the corpus or on the constructed slash suite "
               "(each population in the cell); claim 2 counts the corpus only. Claim 8 is the signed change of "
               "next-token accuracy after `/` when the heads are cut, in points, with its 95% interval: negative "
               "means accuracy fell.")
RULES = ("A claimed range is supported when the estimate lies in it, not supported when the whole 95% interval lies "
         "outside it, else inconclusive; a bound is supported when the whole interval is on the claimed side, not "
         "supported when it is wholly on the other side, else inconclusive. Claims 3-6 and 8 are about SDHs: "
         "without SDHs they are inconclusive (reason: no SDH), with values measured on the top heads by `/` mass.")


class Verdict(str, Enum):
    """A claim's verdict on one model; why (when it is not the rule's plain outcome) is a separate reason."""

    SUPPORTED = "supported"
    NOT_SUPPORTED = "not supported"
    INCONCLUSIVE = "inconclusive"
    NA = "n/a"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Claim:
    id: int
    text: str
    claimed: str                         # the write-up's words
    kind: str                            # "range", "at-least", "at-most", "exists", "all-models"
    bounds: tuple[float, float] | float | None
    bound_source: str = "the write-up"


CLAIMS: tuple[Claim, ...] = (
    Claim(1, "SDHs exist (≥1 head passes the strict rule)", "present in all tested Transformers", "exists", None),
    Claim(2, "SDHs are 15-20% of all heads", "15-20%", "range", (0.15, 0.20)),
    Claim(3, "specificity for `/` over other symbols", "5-8x", "range", (5.0, 8.0)),
    Claim(4, "position-insensitive", "insensitive to where `/` appears", "at-most", 0.25,
          "ours: CV of the position curve below 0.25"),
    Claim(5, "context-independent (random-token prompts keep the score)", "little affected by context",
          "at-least", 0.8, "ours: random/natural ratio at least 0.8"),
    Claim(6, "concentrated in middle layers (relative depth 1/3 to 2/3)", "middle layers (4-8 of 12)", "at-least",
          None, "ours: share in the middle third above that third's share of layers"),
    Claim(7, "consistent across architectures (encoder and decoder)", "observed across architectures",
          "all-models", None),
    Claim(8, "ablating the SDHs costs 2-3 accuracy points on text with `/`",
          "accuracy falls 2-3 points (signed change −3 to −2)", "range", (-3.0, -2.0)),
    Claim(9, "abnormal head activity reveals the input's structure", "a data-quality signal (application)",
          "monitor", None, "ours: per kind of structure, the heads' AUROC interval above the best attention-free "
          "baseline's"),
)
BY_ID = {c.id: c for c in CLAIMS}
NO_SDH = "no SDH"


def verdict_range(iv: Interval, lo: float, hi: float) -> Verdict:
    v, a, b = iv
    if any(map(math.isnan, iv)):
        return Verdict.INCONCLUSIVE
    if lo <= v <= hi:
        return Verdict.SUPPORTED
    return Verdict.NOT_SUPPORTED if (b < lo or a > hi) else Verdict.INCONCLUSIVE


def verdict_bound(iv: Interval, bound: float, at_least: bool) -> Verdict:
    _, a, b = iv
    if any(map(math.isnan, iv)):
        return Verdict.INCONCLUSIVE
    on_side, off_side = (a >= bound, b < bound) if at_least else (b <= bound, a > bound)
    return Verdict.SUPPORTED if on_side else (Verdict.NOT_SUPPORTED if off_side else Verdict.INCONCLUSIVE)
