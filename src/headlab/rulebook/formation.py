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
# An exact two-sided permutation test of 3 against 3 runs cannot go below p = 2/20 = 0.1, so it could never reach
# 0.05; 4 against 4 reaches 2/70 = 0.029.
MIN_INIT_SEEDS = 4
S, N, I = Verdict.SUPPORTED, Verdict.NOT_SUPPORTED, Verdict.INCONCLUSIVE


def three_stages(s: Mapping[str, Any]) -> Judgement:
    power = f"{s['seeds']} seeds of {s['steps']:,} steps; {s['three']} of {s['heads']} specialized heads"
    if s["seeds"] < MIN_SEEDS or s["steps"] < MIN_STEPS:
        return Judgement(I, "underpowered: runs too few or too short", power)
    share = share_above(s["three"], s["heads"])
    near = all(b and a / NEAR <= b <= a * NEAR for a, b in zip(STAGES, s["boundaries"]))
    if share == S and near:
        return Judgement(S, "", power)
    if share == N:
        return Judgement(N, "", power)
    return Judgement(I, "boundaries away from 10k / 100k" if share == S else "", power)


def early_prediction(s: Mapping[str, Any]) -> Judgement:
    """Gradient features beat the score-alone baseline at some early fraction: the paired AUROC gain's
    Bonferroni-adjusted interval above zero; not supported when every interval's upper end is under 0.02."""
    gains = s["gains"]  # fraction -> [gain, lo, hi]
    power = f"{s['seeds']} seeds (leave-one-seed-out); " + ", ".join(
        f"{f}: {g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}]" for f, g in gains.items())
    if s["seeds"] < MIN_SEEDS:
        return Judgement(I, f"underpowered: {s['seeds']} seeds", power)
    if not gains:
        return Judgement(I, "nothing to predict: no AUROC gain could be measured (no head, or every head, "
                            "specialized)", power)
    if any(g[1] > 0 for g in gains.values()):
        return Judgement(S, "", power)
    if all(g[2] < 0.02 for g in gains.values()):
        return Judgement(N, "", power)
    return Judgement(I, "", power)


def initialization(s: Mapping[str, Any]) -> Judgement:
    """Specialized heads per run under two initializations at one budget and seed set: an exact permutation test
    of the difference in means (two-sided)."""
    a, b = list(s["a"]), list(s["b"])
    pooled, n = a + b, len(a)
    observed = abs(sum(a) / max(len(a), 1) - sum(b) / max(len(b), 1))
    splits = list(combinations(range(len(pooled)), n))
    extreme = sum(abs(sum(pooled[i] for i in c) / n - sum(pooled[i] for i in range(len(pooled)) if i not in c)
                      / max(len(b), 1)) >= observed - 1e-12 for c in splits)
    p = extreme / len(splits) if splits else math.nan
    power = f"{len(a)} and {len(b)} seeds; exact p = {p:.3f} (smallest reachable {2 / max(len(splits), 1):.3f})"
    if min(len(a), len(b)) < MIN_INIT_SEEDS:
        return Judgement(I, "underpowered", power)
    return Judgement(S, "", power) if p < 0.05 else Judgement(I, "no difference detected", power)


def fostered(s: Mapping[str, Any]) -> Judgement:
    """A lever fosters a head: more of the arm's seeds end with an SDH than the plain arm's at the same seeds and
    budget, by Fisher's exact test (one-sided); the plain arm is the null itself."""
    if s.get("null_arm"):
        return Judgement(Verdict.NA, "the null arm")
    (k1, n1), (k2, n2) = s["arm"], s["plain"]
    power = fisher_power(k1, n1, k2, n2)
    if min(n1, n2) == 0:
        return Judgement(I, "one arm has no runs", power)
    if k1 == 0 and k2 == 0:
        return Judgement(I, "neither arm forms one", power)
    if k1 / n1 <= k2 / n2:
        return Judgement(N, "the plain arm forms one as often", power)
    return Judgement(S, "", power) if fisher_p(k1, n1, k2, n2) < 0.05 else Judgement(I, "underpowered", power)


RULES = (
    declare(Rule("formation.stages", DOC, "three stages: noise (0-10k steps), slash-related gradients growing "
                 "(10k-100k), a stable pattern after 100k", "per specialized head, the number of segments (1, 2, "
                 "3) of a piecewise-linear fit of its score against log step chosen by BIC, and the boundaries",
                 "Wilson 95% interval of the share choosing three; boundaries' medians",
                 "share's lower bound above 1/2, boundaries within ×3 of 10k and 100k",
                 "the document's boundaries; ×3 ours (half a decade)", "fewer segments (BIC)",
                 f"≥ {MIN_SEEDS} seeds of ≥ {MIN_STEPS:,} steps", three_stages)),
    declare(Rule("formation.prediction", DOC, "gradient patterns early in training predict which heads "
                 "specialize", "AUROC of gradient features at 1%, 5%, 10% of training, leave-one-seed-out, minus "
                 "the AUROC of the score alone at the same step (paired bootstrap, Bonferroni over the three)",
                 "interval above zero at some fraction", "0; not supported when every upper end is under 0.02",
                 "ours", "the score alone, the layer index, random", f"≥ {MIN_SEEDS} seeds", early_prediction)),
    declare(Rule("formation.init", DOC, "some initializations favour specialization", "specialized heads per "
                 "run under two initializations, same budget and seeds", "exact permutation test of the means, "
                 "two-sided", "p < 0.05", "ours", "initialization labels exchangeable",
                 f"≥ {MIN_INIT_SEEDS} seeds per initialization (3 against 3 cannot reach p < 0.05)",
                 initialization)),
    declare(Rule("formation.foster", DOC, "a training strategy can deliberately foster a specific head (active "
                 "induction)", "seeds whose run ends with an SDH (the strict rule on held-out probe windows), the "
                 "arm against the plain arm at the same seeds and budget", "Fisher's exact test, one-sided",
                 "p < 0.05", "ours, declared after the induction study's runs (the conventional threshold)",
                 "the plain arm: the same training without the lever", "the count that would reach p < 0.05 is "
                 "stated (3 seeds a side cannot: the smallest p is 0.05)", fostered)),
)
