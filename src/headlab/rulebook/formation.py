"""The slash-heads document's formation claims: three stages of training, early prediction of which heads
specialize and initialization's effect, declared before the long runs that judge them; and active induction
(fostering a head on purpose), declared after the induction study's runs existed (its threshold is the
conventional one, not read from them)."""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Mapping

from headlab.rulebook.book import Judgement, Rule, Verdict, declare
from headlab.rulebook.decide import fisher_p, fisher_power, share_above

DOC = "slash-dominance heads (seeds/)"
MIN_SEEDS = 3
MIN_STEPS = 100_000          # the document's third stage starts at 100k steps
STAGES = (10_000, 100_000)   # the document's stage boundaries
NEAR = 3.0                   # a boundary within a factor of 3 of the document's (half a decade on a log axis)
# The fewest runs at which each rule's calibration (headlab.calibration) reads its planted effect supported in 80% of
# draws. An exact two-sided permutation test of 3 against 3 runs cannot go below p = 2/20 = 0.1; 4 against 4 reaches
# 2/70 = 0.029 but supports the planted difference in fewer than 80% of draws; 5 against 5 does.
MIN_INIT_SEEDS = 5
# Every seed against none: 5 a side gives p = 0.004, the first below Holm's first bound for the induction study's six
# levers, 0.05 / 6; but the planted arm then passes Holm's correction in fewer than 80% of draws, and 6 a side does
MIN_FOSTER_SEEDS = 6
S, N, I = Verdict.SUPPORTED, Verdict.NOT_SUPPORTED, Verdict.INCONCLUSIVE
DOCUMENT_TARGET = "slash_mass"  # the document's object: slash-dominance heads, by `/` mass
TARGETS = {"slash_mass": "SDH", "sink": "sink head", "previous-token": "previous-token head",
           "induction": "induction head"}


def untestable(s: Mapping[str, Any]) -> Judgement | None:
    """"Untestable here" when no head of the target formed in any run, by the definition the statistics name
    (statistics that do not say what their target is, or whether it formed, predate the target's record: judged as
    they are): for SDHs with a strict-rule record, a head that passes the strict rule at the final checkpoint (the
    runs where one passed at some checkpoint only are said); otherwise a head's mean score at 0.5."""
    if "formed" not in s or s["formed"]:
        return None
    what = TARGETS.get(s["target"], f"{s['target']} head")
    top = max(s["top"], default=float("nan"))
    if s.get("definition") == "strict rule":
        once = f"; {s['transient']} had one at some checkpoint only" if s.get("transient") else ""
        return Judgement(I, f"untestable here: no run of {s['runs']} ends with an {what} by the strict rule{once}",
                         f"{s['runs']} runs; the strict rule at every checkpoint; the top {s['target']} score "
                         f"reached {top:.2f}")
    power = f"{s['runs']} runs; the top {s['target']} score reached {top:.2f} (threshold 0.5)"
    if s["target"] == DOCUMENT_TARGET:  # not an SDH by its definition: these runs keep no strict rule to read
        return Judgement(I, f"untestable here: no head's mean {s['target']} score reached 0.5 in {s['runs']} runs "
                         "(no strict-rule record)", power)
    return Judgement(I, f"untestable here: no {what} formed in {s['runs']} runs", power)


def three_stages(s: Mapping[str, Any]) -> Judgement:
    """Three segments chosen by most specialized heads (Wilson lower bound above 1/2), more often than by the
    heads that do not specialize (the declared null: Fisher's exact test, one-sided, p < 0.05), with boundaries
    near the document's."""
    if (no := untestable(s)) is not None:
        return no
    power = f"{s['seeds']} seeds of {s['steps']:,} steps; {s['three']} of {s['heads']} specialized heads"
    if "null_heads" in s:
        power += f", {s['null_three']} of {s['null_heads']} other heads choose three segments"
    if s["seeds"] < MIN_SEEDS or s["steps"] < MIN_STEPS:
        return Judgement(I, "underpowered: runs too few or too short", power)
    share = share_above(s["three"], s["heads"])
    if share == N:
        return Judgement(N, "", power)
    if "null_heads" not in s:
        return Judgement(I, "the declared null (heads that do not specialize) was not measured", power)
    p = fisher_p(s["three"], s["heads"], s["null_three"], s["null_heads"])
    power += f" (Fisher's exact p = {p:.3f}, one-sided)"
    if not p < 0.05:
        return Judgement(I, "no more often than the heads that do not specialize", power, p=p)
    near = all(b and a / NEAR <= b <= a * NEAR for a, b in zip(STAGES, s["boundaries"]))
    if share == S and near:
        return Judgement(S, "", power, p=p)
    return Judgement(I, "boundaries away from 10k / 100k" if share == S else "", power, p=p)


NULLS = ("early_score_alone", "layer_index", "score_and_layer", "random")  # the nulls the rule declares
REFUTE_GAIN = 0.02  # ours: an AUROC gain under this changes no choice of which heads to watch


def early_prediction(s: Mapping[str, Any]) -> Judgement:
    """Gradient features beat every declared null at some early fraction: the paired AUROC gain over the
    strongest null there (the one with the highest AUROC), its Bonferroni-adjusted interval above zero; not
    supported when every interval's upper end is under the refuting gain where a gain that large was possible;
    untestable where the strongest null is at its ceiling at every fraction."""
    if (no := untestable(s)) is not None:
        return no
    gains = s["gains"]  # fraction -> [gain, lo, hi], over the strongest null
    strongest = s.get("strongest", {})
    power = f"{s['seeds']} seeds (leave-one-seed-out); " + ", ".join(
        f"{f}: {g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}]" + (f" over {strongest[f]}" if f in strongest else "")
        for f, g in gains.items())
    if s["seeds"] < MIN_SEEDS:
        return Judgement(I, f"underpowered: {s['seeds']} seeds", power)
    if not gains:
        return Judgement(I, "nothing to predict: no AUROC gain could be measured (no head, or every head, "
                            "specialized)", power)
    if set(s.get("nulls", ())) != set(NULLS):
        return Judgement(I, "not every declared null was tested (score alone only)", power)
    if any(g[1] > 0 for g in gains.values()):
        return Judgement(S, "", power)
    ceiling = at_ceiling(s)
    if ceiling:
        power += f"; at {', '.join(ceiling)} the strongest null leaves less than {REFUTE_GAIN} AUROC to gain"
    room = {f: g for f, g in gains.items() if f not in ceiling}
    if not room:
        return Judgement(I, "untestable here: the strongest null is at its ceiling at every fraction", power)
    if all(g[2] < REFUTE_GAIN for g in room.values()):
        return Judgement(N, "", power)
    return Judgement(I, "", power)


def at_ceiling(s: Mapping[str, Any]) -> list[str]:
    """The fractions where the strongest null's AUROC leaves less than the refuting gain to gain: there an interval
    under that gain could not have been otherwise, and refutes nothing (statistics without the AUROCs: none)."""
    aurocs, strongest = s.get("aurocs", {}), s.get("strongest", {})
    return [f for f in s["gains"] if f in strongest and f in aurocs
            and 1 - (aurocs[f].get(strongest[f]) or 0) < REFUTE_GAIN]


def initialization(s: Mapping[str, Any]) -> Judgement:
    """Specialized heads per run under two initializations at one budget and seed set: an exact permutation test
    of the difference in means (two-sided)."""
    if (no := untestable(s)) is not None:
        return no
    a, b = list(s["a"]), list(s["b"])
    pooled, n = a + b, len(a)
    observed = abs(sum(a) / max(len(a), 1) - sum(b) / max(len(b), 1))
    splits = list(combinations(range(len(pooled)), n))
    extreme = sum(abs(sum(pooled[i] for i in c) / n - sum(pooled[i] for i in range(len(pooled)) if i not in c)
                      / max(len(b), 1)) >= observed - 1e-12 for c in splits)
    p = extreme / len(splits) if splits else math.nan
    power = f"{len(a)} and {len(b)} seeds; exact p = {p:.3f} (smallest reachable {2 / max(len(splits), 1):.3f})"
    if min(len(a), len(b)) < MIN_INIT_SEEDS:
        return Judgement(I, "underpowered", power, p=p)
    return Judgement(S, "", power, p=p) if p < 0.05 else Judgement(I, "no difference detected", power, p=p)


def fostered(s: Mapping[str, Any]) -> Judgement:
    """A lever fosters a head: more of the arm's seeds end with an SDH than the plain arm's at the same seeds and
    budget, by Fisher's exact test (one-sided); the plain arm is the null itself."""
    if s.get("null_arm"):
        return Judgement(Verdict.NA, "the null arm")
    (k1, n1), (k2, n2) = s["arm"], s["plain"]
    power = fisher_power(k1, n1, k2, n2)
    if min(n1, n2) == 0:
        return Judgement(I, "one arm has no runs", power)
    if min(n1, n2) < MIN_FOSTER_SEEDS:
        return Judgement(I, f"underpowered: {min(n1, n2)} seeds a side, {MIN_FOSTER_SEEDS} needed", power,
                         p=fisher_p(k1, n1, k2, n2))
    if k1 == 0 and k2 == 0:
        return Judgement(I, "neither arm forms one", power)
    if k1 / n1 <= k2 / n2:
        return Judgement(N, "the plain arm forms one as often", power)
    p = fisher_p(k1, n1, k2, n2)
    return Judgement(S, "", power, p=p) if p < 0.05 else Judgement(I, "underpowered", power, p=p)


FORMATION_DATA = ("formation/**/track/track.json",)
CLAIMS = "headlab.formation.claims."
STAGES_CODE = "headlab.formation.stages."
PREDICT_CODE = "headlab.formation.predict."

RULES = (
    declare(Rule("formation.stages", DOC, "three stages: noise (0-10k steps), slash-related gradients growing "
                 "(10k-100k), a stable pattern after 100k", "per specialized head of the target (SDHs: `/` mass "
                 "at 0.5), the number of segments (1, 2, 3) of a piecewise-linear fit of its score against log "
                 "step chosen by BIC, and the boundaries; the same fit of every other head", "Wilson 95% interval "
                 "of the share choosing three; Fisher's exact test (one-sided) of that share against the other "
                 "heads'; boundaries' medians", "share's lower bound above 1/2, p < 0.05, boundaries within ×3 "
                 "of 10k and 100k", "the document's boundaries; ×3 ours (half a decade); p the conventional one",
                 "fewer segments (BIC); heads that do not specialize choosing three as often",
                 f"≥ {MIN_SEEDS} seeds of ≥ {MIN_STEPS:,} steps; untestable where no head of the target forms",
                 three_stages,
                 computed_by=(CLAIMS + "formation_claims", STAGES_CODE + "stage_statistics",
                              STAGES_CODE + "gradient_stage_statistics", STAGES_CODE + "specialized",
                              STAGES_CODE + "formed", STAGES_CODE + "segments", STAGES_CODE + "_summary",
                              "headlab.rulebook.formation.untestable"),
                 data=FORMATION_DATA)),
    declare(Rule("formation.prediction", DOC, "gradient patterns early in training predict which heads "
                 "specialize", "AUROC of gradient features at 1%, 5%, 10% of training, leave-one-seed-out, minus "
                 "the AUROC of the strongest declared null at the same step (paired bootstrap, Bonferroni over "
                 "the three); the target's heads (SDHs: `/` mass at 0.5)", "interval above zero at some fraction",
                 "0; not supported when every upper end is under 0.02", "ours",
                 "the score alone, the layer index, the score and the layer index together, random: decided "
                 "against the strongest (the highest AUROC)",
                 f"≥ {MIN_SEEDS} seeds; untestable where no head of the target forms", early_prediction,
                 computed_by=(CLAIMS + "formation_claims", PREDICT_CODE + "prediction_statistics",
                              PREDICT_CODE + "_paired_gain", PREDICT_CODE + "loso", PREDICT_CODE + "features",
                              PREDICT_CODE + "labels", PREDICT_CODE + "layer_index", PREDICT_CODE + "fit_logistic",
                              STAGES_CODE + "formed", "headlab.rulebook.formation.untestable"),
                 data=FORMATION_DATA)),
    declare(Rule("formation.init", DOC, "some initializations favour specialization", "specialized heads of the "
                 "target (SDHs: `/` mass at 0.5) per run under two initializations, same budget and seeds",
                 "exact permutation test of the means, two-sided", "p < 0.05", "ours",
                 "initialization labels exchangeable",
                 f"≥ {MIN_INIT_SEEDS} seeds per initialization (fewer do not reach 80% power on the calibration's "
                 "planted effect; 3 against 3 cannot reach p < 0.05); untestable "
                 "where no head of the target forms", initialization,
                 computed_by=(CLAIMS + "formation_claims", CLAIMS + "specialized_counts", STAGES_CODE + "specialized",
                              "headlab.rulebook.formation.untestable"),
                 data=FORMATION_DATA)),
    declare(Rule("formation.foster", DOC, "a training strategy can deliberately foster a specific head (active "
                 "induction)", "seeds whose run ends with an SDH (the strict rule on held-out probe windows), the "
                 "arm against the plain arm at the same seeds and budget", "Fisher's exact test, one-sided",
                 "p < 0.05", "ours, declared after the induction study's runs (the conventional threshold)",
                 "the plain arm: the same training without the lever", f"≥ {MIN_FOSTER_SEEDS} seeds a side (every "
                 "seed against none then reaches p = 0.001, below Holm's bound for six levers, with 80% power in the "
                 "family on the calibration's planted effect); the count that "
                 "would reach p < 0.05 is stated", fostered,
                 computed_by=("headlab.formation.induce.study.summarize", "headlab.formation.induce.study.judge_arms",
                              "headlab.formation.induce.measure.measure_run",
                              "headlab.formation.induce.measure.checkpoint_scores"),
                 data=("induction/*.json",))),
)
