"""The slash-dominance document's nine claims and their rules (each claim's own number appears only here), and
beside them claim 9 as a data-quality signal, ours (``monitor.beats``, row 10 of a claims table).

Claim 1's strict rule is the document's (> 50% of a head's attention on `/` in 3 consecutive samples that hold
one); its null is the same rule on placebo symbols put in the same character slots of the same constructed
stimuli. Claims 4 and 5 were judged against cutoffs of ours (CV 0.25, ratio 0.8) that heads which are not SDHs
pass too; their cutoffs are now the same statistic's tail over the model's non-SDH heads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from headlab.census.stats import wilson
from headlab.rulebook.book import BOOK, Family, Judgement, Rule, Verdict, declare
from headlab.rulebook.decide import (
    against_controls,
    beyond,
    detectable_rate,
    exceeds_null,
    in_range,
    nan_in,
    width,
)
from headlab.rulebook.multiplicity import holm, surviving

DOC = "slash-dominance heads (seeds/)"
PLACEBO_MINIMUM = 19        # a count above all of P placebos has rank p 1 / (P + 1) <= 0.05 from P = 19
CONTROL_MINIMUM = 100       # matched random head sets: the smallest rank p, 1 / 101, is below 0.01
NON_SDH_TAIL = 0.10         # claims 4-5: the SDHs' statistic beyond nine in ten of the model's other heads
KIND_MARGIN = 0.02          # claim 9: an AUROC difference smaller than this is a tie
# The least evidence at which each rule that estimates can say supported: where its calibration's planted effect
# (headlab.calibration) reads supported in at least 80% of draws. Below it a refutation stands and a support does not.
MIN_SHARE_HEADS = 400       # claim 2: from 392 heads a share of 17.5%, mid-range, lands in [15%, 20%] in >= 80% (exact)
MAX_COST_HALF_WIDTH = 0.75  # claim 8, points: a cost of -2.5 lands in the 1-point range in 80% when se <= 0.5 / 1.28
MIN_KIND_DOCUMENTS = 80     # monitor.kind: the fewest (in steps of 20) at which the planted kind passes in a family
Z95 = 1.959964              # the normal quantile of a 95% two-sided interval
HOLM_TIE = "heads better by its interval, not after Holm's correction over"
NO_SDH = "no SDH"


@dataclass(frozen=True)
class Claim:
    """A claim as the document states it: ``bounds`` is its own number, read only by the rules; ``own_rule``: a
    claim of ours beside the document's, judged by that rule (the document's claim C by ``slash.C``)."""

    id: int
    text: str
    claimed: str
    bounds: tuple[float, float] | None = None
    own_rule: str = ""

    @property
    def rule(self) -> str:
        return self.own_rule or f"slash.{self.id}"


CLAIMS: tuple[Claim, ...] = (
    Claim(1, "SDHs exist (≥1 head passes the strict rule)", "present in all tested Transformers"),
    Claim(2, "SDHs are 15-20% of all heads", "15-20%", (0.15, 0.20)),
    Claim(3, "specificity for `/` over other symbols", "5-8x", (5.0, 8.0)),
    Claim(4, "position-insensitive", "insensitive to where `/` appears"),
    Claim(5, "context-independent (random-token prompts keep the score)", "little affected by context"),
    Claim(6, "concentrated in middle layers (relative depth 1/3 to 2/3)", "middle layers (4-8 of 12)"),
    Claim(7, "consistent across architectures (encoder and decoder)", "observed across architectures"),
    Claim(8, "ablating the SDHs costs 2-3 accuracy points on text with `/`",
          "accuracy falls 2-3 points (signed change −3 to −2)", (-3.0, -2.0)),
    Claim(9, "abnormal head activity reveals the input's structure", "a data-quality signal (application)"),
    Claim(10, "the heads reveal it better than the best attention-free baseline (ours: claim 9 as a data-quality "
          "signal)", "better than every baseline on some kind, worse on none", own_rule="monitor.beats"),
)
BY_ID = {c.id: c for c in CLAIMS}


def _about_sdhs(s: Mapping[str, Any], verdict: Verdict, power: str) -> Judgement:
    """Claims 3-6 describe SDHs: without one the values (of the top heads by `/` mass) are shown, not judged."""
    if (no := no_sdh(s)) is not None:
        return Judgement(Verdict.INCONCLUSIVE, no, power)
    return Judgement(verdict, "", power)


def no_sdh(s: Mapping[str, Any]) -> str | None:
    """Why a claim about SDHs has none to describe: no head passes, or the heads that pass do not beat claim 1's
    placebo null (statistics without that mark predate it)."""
    if not s["sdhs"]:
        return NO_SDH
    return None if s.get("beyond_null", True) else NO_SDH + " beyond the placebo null"


def sdhs_exist(s: Mapping[str, Any]) -> Judgement:
    parts, found = [], []
    for name, p in s["populations"].items():
        j = exceeds_null(p["count"], p.get("placebo") or [], PLACEBO_MINIMUM)
        rate = detectable_rate(p["samples"], s["consecutive"])
        said = (f"a head over the threshold in {rate:.0%} of its {p['samples']} samples passes with 80% probability"
                if p["samples"] >= s["consecutive"] else f"{p['samples']} samples: too few for the rule")
        parts.append(f"{name}: {said}" + (f"; {j.power}" if j.power else ""))
        found.append(j)
    power = "; ".join(parts)
    for verdict in (Verdict.SUPPORTED, Verdict.INCONCLUSIVE):
        hit = [j for j in found if j.verdict == verdict]
        if hit:
            return Judgement(verdict, hit[0].reason, power, p=hit[0].p)
    reasons = sorted({j.reason for j in found if j.reason})
    return Judgement(Verdict.NOT_SUPPORTED, "; ".join(reasons), power)


def sdh_share(s: Mapping[str, Any]) -> Judgement:
    iv = wilson(s["count"], s["heads"])
    verdict = in_range(iv, *BY_ID[2].bounds)  # type: ignore[misc]
    power = f"Wilson 95% upper bound {iv[2]:.3f} of {s['heads']} heads"
    if verdict == Verdict.SUPPORTED and s["heads"] < MIN_SHARE_HEADS:
        return Judgement(Verdict.INCONCLUSIVE, f"in the range, but underpowered: {s['heads']} heads, "
                         f"{MIN_SHARE_HEADS} needed", power)
    return Judgement(verdict, "", power)


def specificity(s: Mapping[str, Any]) -> Judgement:
    return _about_sdhs(s, in_range(s["interval"], *BY_ID[3].bounds), width(s["interval"]))  # type: ignore[misc]


def position_insensitive(s: Mapping[str, Any]) -> Judgement:
    if nan_in([s["null"]] * 3):
        return Judgement(Verdict.INCONCLUSIVE, "no non-SDH heads to calibrate against", width(s["interval"]))
    return _about_sdhs(s, beyond(s["interval"], s["null"], at_least=False),
                       f"{width(s['interval'])}; cutoff {s['null']:.3g} from {s['null_heads']} non-SDH heads")


def context_independent(s: Mapping[str, Any]) -> Judgement:
    """Little affected by context: the median over SDHs of each head's distance of its random/natural ratio from
    1 on a log scale, |log r|, below the same distance's cutoff over the model's non-SDH heads. Statistics of the
    earlier statistic (the median ratio, whose distance hides heads on both sides of 1) are not judged."""
    if "distance" not in s:
        return Judgement(Verdict.INCONCLUSIVE, "measured as the median ratio, an earlier statistic: measure again",
                         "")
    if nan_in([s["null"]] * 3) or nan_in(s["distance"]):
        return Judgement(Verdict.INCONCLUSIVE, "no non-SDH heads to calibrate against" if nan_in([s["null"]] * 3)
                         else "no ratio", width(s["distance"]))
    far = s["distance"]
    return _about_sdhs(s, beyond(far, s["null"], at_least=False),
                       f"|log ratio| {far[0]:.3g} [{far[1]:.3g}, {far[2]:.3g}]; cutoff {s['null']:.3g} from "
                       f"{s['null_heads']} non-SDH heads")


def middle_layers(s: Mapping[str, Any]) -> Judgement:
    iv = wilson(s["middle"], s["heads"])
    return _about_sdhs(s, beyond(iv, s["layer_share"], at_least=True),
                       f"{s['heads']} heads: Wilson 95% interval [{iv[1]:.2f}, {iv[2]:.2f}]")


def across_architectures(s: Mapping[str, Any]) -> Judgement:
    models = s["models"]
    kinds = {m["kind"] for m in models.values()}
    verdicts = [m["verdict"] for m in models.values()]
    power = f"{len(models)} models, {len(kinds)} kinds"
    if "not supported" in verdicts:
        return Judgement(Verdict.NOT_SUPPORTED, "", power)
    if len(kinds) < 2:
        return Judgement(Verdict.INCONCLUSIVE, "one architecture kind measured", power)
    if all(v == "supported" for v in verdicts):
        return Judgement(Verdict.SUPPORTED, "", power)
    return Judgement(Verdict.INCONCLUSIVE, "claim 1 inconclusive on some model", power)


def ablation_cost(s: Mapping[str, Any]) -> Judgement:
    if not s["causal"]:
        return Judgement(Verdict.NA, "encoder")
    lo, hi = BY_ID[8].bounds or (math.nan, math.nan)
    j = against_controls(s["effect"], lo, hi, s["draws"], s["p"], CONTROL_MINIMUM)
    no = no_sdh(s)
    if no is not None:
        return Judgement(Verdict.INCONCLUSIVE, no, j.power)
    half = (s["effect"][2] - s["effect"][1]) / 2
    if j.verdict == Verdict.SUPPORTED and not half <= MAX_COST_HALF_WIDTH:
        return Judgement(Verdict.INCONCLUSIVE, f"underpowered: interval half-width {half:.2f} points, at most "
                         f"{MAX_COST_HALF_WIDTH} needed", j.power)
    return j


def kind_stats(row: Mapping[str, Any]) -> dict[str, Any]:
    """``monitor.kind``'s statistics from one kind's row of a monitor evaluation (``evaluate.json``): the heads'
    and the best baseline's AUROCs with their intervals, and the paired interval where it was recorded."""
    return {"heads": row["auroc"]["heads"], "baseline": row["auroc"][row["best_baseline"]],
            "best": row["best_baseline"], "paired": row.get("heads_vs_best"), "documents": row.get("documents")}


def kind_verdict(s: Mapping[str, Any]) -> Judgement:
    """One kind of structure: heads better when AUROC(heads) − AUROC(best baseline) ≥ the margin with its
    paired interval above zero (files without the paired interval: the two marginal intervals apart), baseline
    better in the mirror case, else a tie. Its p, for the correction over kinds: one-sided, that the heads are no
    better, from the paired bootstrap interval read as normal (its half-width over 1.96 is the standard error);
    none without the paired interval."""
    h, b = s["heads"], s["baseline"]
    diff = h[0] - b[0]
    paired = s.get("paired")
    apart_up = paired[1] > 0 if paired else h[1] > b[2]
    apart_down = paired[2] < 0 if paired else b[1] > h[2]
    p = paired_p(paired) if paired else None
    power = f"AUROC {h[0]:.4f} vs {b[0]:.4f} ({'paired' if paired else 'marginal'} intervals)"
    if diff >= KIND_MARGIN and apart_up:
        n = s.get("documents")
        if n is None or n < MIN_KIND_DOCUMENTS:
            return Judgement(Verdict.INCONCLUSIVE, f"heads better by its interval, but underpowered: "
                             f"{'an unrecorded number of' if n is None else n} documents of the kind, "
                             f"{MIN_KIND_DOCUMENTS} needed", power, p=p)
        return Judgement(Verdict.SUPPORTED, "heads better", power, p=p)
    if -diff >= KIND_MARGIN and apart_down:
        return Judgement(Verdict.NOT_SUPPORTED, "baseline better", power, p=p)
    return Judgement(Verdict.INCONCLUSIVE, "tie", power, p=p)


def paired_p(paired: Sequence[float]) -> float:
    """One-sided p that a paired difference [estimate, 2.5%, 97.5%] is at most zero, its interval read as normal."""
    d, lo, hi = paired
    se = (hi - lo) / (2 * Z95)
    return (0.0 if d > 0 else 1.0) if se <= 0 else float(0.5 * math.erfc(d / se / math.sqrt(2)))


def judge_kinds(kinds: Mapping[str, Mapping[str, Any]]) -> dict[str, Judgement]:
    """Every kind of one evaluation judged by ``monitor.kind``, its heads-better verdicts corrected over the kinds
    (one family: :func:`headlab.rulebook.multiplicity.holm`): a kind whose heads are better by its interval but not
    after the correction reads a tie, and says so."""
    judged = {k: BOOK["monitor.kind"].judge(v) for k, v in kinds.items()}
    records = holm([{"rule": "monitor.kind", "verdict": str(j.verdict), "reason": j.reason, "p": j.p}
                    for j in judged.values()])
    out = {}
    for (k, j), r in zip(judged.items(), records):
        kept = r["verdict"] == str(j.verdict)
        out[k] = j if kept else replace(j, verdict=Verdict.INCONCLUSIVE, reason=f"tie ({HOLM_TIE} {len(kinds)} kinds)")
    return out


def reveal_kind(s: Mapping[str, Any]) -> Judgement:
    """One kind of structure revealed by the heads: their AUROC against the fresh reference documents above chance
    by the margin, its interval above 1/2, with the documents the rule is calibrated at; at chance when the whole
    interval is below chance plus the margin. Its p (for the correction over kinds): one-sided, that the AUROC is
    at most 1/2, from its bootstrap interval read as normal."""
    h, n = s["heads"], s.get("documents")
    p = paired_p([x - 0.5 for x in h])
    power = f"AUROC {h[0]:.4f} [{h[1]:.4f}, {h[2]:.4f}] against the fresh reference documents"
    if h[0] - 0.5 >= KIND_MARGIN and h[1] > 0.5:
        if n is None or n < MIN_KIND_DOCUMENTS:
            return Judgement(Verdict.INCONCLUSIVE, f"apart from chance, but underpowered: "
                             f"{'an unrecorded number of' if n is None else n} documents of the kind, "
                             f"{MIN_KIND_DOCUMENTS} needed", power, p=p)
        return Judgement(Verdict.SUPPORTED, "revealed", power, p=p)
    if h[2] < 0.5 + KIND_MARGIN:
        return Judgement(Verdict.NOT_SUPPORTED, "at chance", power, p=p)
    return Judgement(Verdict.INCONCLUSIVE, "not apart from chance", power, p=p)


def revealed_kinds(kinds: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The kinds :func:`reveal_kind` finds revealed that survive Holm's step-down over all the kinds: what claim 9's
    verdict counts, and what its row says."""
    judged = {k: reveal_kind(v) for k, v in kinds.items()}
    alive = surviving([j.p for j in judged.values()])
    return [k for i, (k, j) in enumerate(judged.items()) if j.verdict == Verdict.SUPPORTED and i in alive]


def reveals(s: Mapping[str, Any]) -> Judgement:
    """Claim 9, the document's: the heads reveal some kind of structure (:func:`revealed_kinds`, corrected over the
    kinds by Holm's step-down); not supported when every kind is at chance."""
    judged = {k: reveal_kind(v) for k, v in s["kinds"].items()}
    names = list(judged)
    revealed = revealed_kinds(s["kinds"])
    power = (f"{len(names)} kinds, margin {KIND_MARGIN} AUROC above chance, corrected over the kinds (Holm), "
             f"≥ {MIN_KIND_DOCUMENTS} documents of a kind; revealed: {', '.join(revealed) or 'none'}")
    if revealed:
        return Judgement(Verdict.SUPPORTED, "", power)
    if names and all(j.verdict == Verdict.NOT_SUPPORTED for j in judged.values()):
        return Judgement(Verdict.NOT_SUPPORTED, "every kind at chance", power)
    return Judgement(Verdict.INCONCLUSIVE, "no kind apart from chance after the correction", power)


def structure_signal(s: Mapping[str, Any]) -> Judgement:
    by = {k: j.reason.split(" (")[0] for k, j in judge_kinds(s["kinds"]).items()}
    better = [k for k, v in by.items() if v == "heads better"]
    worse = [k for k, v in by.items() if v == "baseline better"]
    power = f"{len(by)} kinds, margin {KIND_MARGIN} AUROC, heads better corrected over the kinds (Holm)"
    if not better:
        return Judgement(Verdict.NOT_SUPPORTED, "", power)
    return Judgement(Verdict.INCONCLUSIVE, "mixed", power) if worse else Judgement(Verdict.SUPPORTED, "", power)


ROWS = "headlab.study.claim_rows."  # the functions that compute each claim's statistics
CLAIMS_DATA = ("**/claims.json",)
ABOUT = (ROWS + "about_real_sdhs", "headlab.rulebook.slash.no_sdh")  # what decides that there is an SDH
MONITOR_DATA = ("monitor/**/evaluate.json",)
KIND_ROW = "headlab.monitor.comparison.kind_row"  # it chooses the best baseline the heads are held to
JUDGED_KINDS = "headlab.monitor.comparison.judge_kinds_of"  # it judges an evaluation's kinds as one family

RULES = (
    declare(Rule("slash.1", DOC, "SDHs are present in all tested Transformers",
                 "heads passing the strict rule, per population (corpus windows with `/`; the constructed slash "
                 "suite)", "the count against the same rule for placebo symbols in the same slots",
                 "above the placebo counts' 95th percentile", "the document's rule; the null's percentile",
                 f"placebo symbols in the slash suite's `/` slots; at least {PLACEBO_MINIMUM} placebos",
                 "80% power stated as the per-sample rate of exceeding the threshold that passes", sdhs_exist,
                 computed_by=(ROWS + "_exist_row",), data=CLAIMS_DATA, family=Family.EVERY)),
    declare(Rule("slash.2", DOC, "SDHs are 15-20% of all heads", "corpus SDH share (Wilson 95%)", "range",
                 "estimate in [0.15, 0.20]; not supported when the interval is outside", "the document",
                 "none", f"≥ {MIN_SHARE_HEADS} heads to read supported (fewer: an estimate in the range reads "
                 "inconclusive); the Wilson upper bound is stated", sdh_share,
                 computed_by=(ROWS + "measure",), data=CLAIMS_DATA, family=Family.DESCRIBES)),
    declare(Rule("slash.3", DOC, "5-8x specificity for `/` over other symbols",
                 "median over SDHs of the `/` / control-symbol mass ratio (bootstrap)", "range",
                 "estimate in [5, 8]", "the document", "the control symbols in the same slot", "≥ 1 SDH",
                 specificity,
                 computed_by=(ROWS + "measure", ROWS + "_median_cell", *ABOUT),
                 data=CLAIMS_DATA, family=Family.DESCRIBES)),
    declare(Rule("slash.4", DOC, "insensitive to where `/` appears", "median over SDHs of the position curve's CV",
                 "one-sided bound: the whole interval below the cutoff",
                 f"the {NON_SDH_TAIL:.0%} quantile of the same CV over the model's non-SDH heads",
                 "null: the model's non-SDH heads (the earlier cutoff 0.25 was ours and passed heads that are "
                 "not SDHs)", "non-SDH heads of the same model", "≥ 1 SDH", position_insensitive,
                 computed_by=(ROWS + "measure", ROWS + "_median_cell", ROWS + "_others", *ABOUT),
                 data=CLAIMS_DATA, family=Family.EVERY)),
    declare(Rule("slash.5", DOC, "little affected by context", "median over SDHs of each head's distance of its "
                 "random-token / natural mass ratio r from 1, |log r| (the median of the distances, not the distance "
                 "of the median ratio)", "one-sided bound: the whole interval of the median |log r| below the "
                 "cutoff", f"the {NON_SDH_TAIL:.0%} quantile of |log r| over the model's non-SDH heads",
                 "null: the model's non-SDH heads (the earlier cutoff, r ≥ 0.8, was ours)",
                 "non-SDH heads of the same model", "≥ 1 SDH", context_independent,
                 computed_by=(ROWS + "measure", ROWS + "context_distance", ROWS + "_others", *ABOUT),
                 data=CLAIMS_DATA, family=Family.EVERY)),
    declare(Rule("slash.6", DOC, "concentrated in middle layers (4-8 of 12)",
                 "share of SDHs in the middle third of relative depth (Wilson 95%)",
                 "one-sided bound: the whole interval above the middle third's share of layers",
                 "the share of layers in the middle third", "null: SDHs spread evenly over layers",
                 "uniform over layers", "≥ 1 SDH", middle_layers,
                 computed_by=(ROWS + "measure", *ABOUT),
                 data=CLAIMS_DATA, family=Family.EVERY)),
    declare(Rule("slash.7", DOC, "observed across architectures", "claim 1's verdict per model",
                 "every model", "claim 1 supported on every model, with ≥ 1 encoder and ≥ 1 decoder",
                 "the document", "claim 1's", "two architecture kinds", across_architectures,
                 computed_by=(ROWS + "cross_model",), data=CLAIMS_DATA)),
    declare(Rule("slash.8", DOC, "ablating SDHs costs 2-3 accuracy points", "signed change of next-token accuracy "
                 "within 3 tokens after `/`, in points, with its 95% interval; text without `/` reported beside "
                 "(specificity)", "the effect in [−3, −2] with its interval below zero, and the target's loss "
                 "change beyond matched random head sets (rank test)", "range from the document; p < 0.01 ours "
                 "(p < 0.05 against for not supported)", "the document's range; ours for p",
                 "random head sets matched per layer, never a target head",
                 f"at least {CONTROL_MINIMUM} control sets (smallest rank p 1 / {CONTROL_MINIMUM + 1}); to read "
                 f"supported, a 95% interval half-width of at most {MAX_COST_HALF_WIDTH} points",
                 ablation_cost,
                 computed_by=(ROWS + "ablation_row", *ABOUT),
                 data=CLAIMS_DATA, family=Family.EVERY)),
    declare(Rule("monitor.kind", "the head monitor (ours)", "the heads detect this kind of structure better than "
                 "the best attention-free baseline", "AUROC(heads) − AUROC(best baseline), paired bootstrap",
                 "difference ≥ margin and its interval above zero", f"{KIND_MARGIN} AUROC",
                 "ours: a smaller difference changes no decision a user makes", "the best baseline of "
                 "characters, loss, gopher, c4 and the word-bigram model", f"≥ {MIN_KIND_DOCUMENTS} documents "
                 "of the kind to read heads better (fewer: a tie at best)",
                 kind_verdict,
                 computed_by=("headlab.rulebook.slash.kind_stats", KIND_ROW, JUDGED_KINDS), data=MONITOR_DATA)),
    declare(Rule("slash.9", DOC, "abnormal head activity reveals the input's structure",
                 "per kind of structure, AUROC(heads) against fresh reference documents (percentile bootstrap)",
                 "the interval above chance by the margin, corrected over the kinds (Holm)",
                 f"AUROC ≥ 0.5 + {KIND_MARGIN} on ≥ 1 kind; not supported when every kind is at chance",
                 "ours: the document gives no test", "heads at chance (AUROC 1/2)",
                 f"≥ {MIN_KIND_DOCUMENTS} documents of a kind to count it revealed", reveals,
                 computed_by=(ROWS + "monitor_row", "headlab.rulebook.slash.kind_stats"),
                 data=MONITOR_DATA, family=Family.EVERY)),
    declare(Rule("monitor.beats", "the head monitor (ours)", "the heads reveal the input's structure better than "
                 "the best attention-free baseline (claim 9 as a data-quality signal)",
                 "per kind of structure, monitor.kind's verdict", "count of kinds",
                 "heads better on ≥ 1 kind and baseline better on none; not supported when better on none",
                 "ours", "the attention-free baselines", "the kinds evaluated", structure_signal,
                 computed_by=(ROWS + "beats_row", "headlab.rulebook.slash.kind_stats", KIND_ROW),
                 data=MONITOR_DATA, family=Family.EVERY)),
)
