"""The tests the rules share: a claimed range, a one-sided bound, a count against a placebo null, an effect
against matched controls, and the power statements that go with each negative."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy.stats import fisher_exact

from headlab.census.stats import Interval, wilson
from headlab.rulebook.book import Judgement, Verdict

S, N, I = Verdict.SUPPORTED, Verdict.NOT_SUPPORTED, Verdict.INCONCLUSIVE


def nan_in(iv: Sequence[float]) -> bool:
    return any(x is None or math.isnan(x) for x in iv)


def in_range(iv: Sequence[float], lo: float, hi: float) -> Verdict:
    """A descriptive range: supported when the estimate lies in it, not supported when the whole interval lies
    outside it, else inconclusive."""
    v, a, b = iv
    if nan_in(iv):
        return I
    if lo <= v <= hi:
        return S
    return N if (b < lo or a > hi) else I


def beyond(iv: Sequence[float], bound: float, at_least: bool) -> Verdict:
    """A one-sided bound: supported when the whole interval is on the claimed side, not supported when it is
    wholly on the other side, else inconclusive."""
    _, a, b = iv
    if nan_in(iv):
        return I
    on_side, off_side = (a >= bound, b < bound) if at_least else (b <= bound, a > bound)
    return S if on_side else (N if off_side else I)


def width(iv: Sequence[float]) -> str:
    """What an interval could resolve: its half-width."""
    return "n/a" if nan_in(iv) else f"95% interval half-width {(iv[2] - iv[1]) / 2:.3g}"


def run_probability(q: float, n: int, k: int) -> float:
    """P(at least one run of ``k`` successes in ``n`` independent trials of success probability ``q``)."""
    # state j: the current run length (0..k-1); the mass that reaches k is absorbed
    state = np.zeros(k)
    state[0] = 1.0
    hit = 0.0
    for _ in range(n):
        nxt = np.zeros(k)
        nxt[0] = state.sum() * (1 - q)
        nxt[1:] = state[:-1] * q
        hit += state[-1] * q
        state = nxt
    return float(hit)


def detectable_rate(n: int, k: int, power: float = 0.8) -> float:
    """The smallest per-sample rate of exceeding the threshold at which a head passes the k-in-a-row rule in
    ``n`` samples with probability ``power`` (samples taken as independent)."""
    if n < k:
        return math.nan
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if run_probability(mid, n, k) < power else (lo, mid)
    return hi


def exceeds_null(count: int, null: Sequence[int], minimum: int) -> Judgement:
    """A count of passing heads against the same count for placebo targets: supported when it exceeds the
    null's 95th percentile (the rank p-value of a count above every placebo is 1 / (P + 1), so at least
    ``minimum`` placebos are needed for p <= 0.05)."""
    null = list(null)
    q95 = float(np.percentile(null, 95, method="higher")) if null else math.nan
    p = (1 + sum(c >= count for c in null)) / (len(null) + 1) if null else math.nan
    said = f"placebo null: {len(null)} targets, 95th percentile {q95:g}, rank p = {p:.3f}" if null else ""
    if count == 0:
        return Judgement(N, "", said)
    if not null:
        return Judgement(I, "no placebo null", "")
    if count <= q95:
        return Judgement(N, "within the placebo null", said)
    if len(null) < minimum:
        return Judgement(I, f"underpowered: {len(null)} placebos, smallest p {1 / (len(null) + 1):.3f}", said, p=p)
    return Judgement(S, "", said, p=p)


def against_controls(effect: Interval, lo: float, hi: float, draws: int, p: float, min_draws: int) -> Judgement:
    """A causal effect in a claimed range [lo, hi]: supported when the estimate lies in the range, its interval
    excludes zero, and the target beats the matched random controls at p < 0.01 with at least ``min_draws``
    control sets; not supported when the interval lies wholly outside the range or, with enough controls, the
    target does not beat them at p < 0.05; else inconclusive, with the reason."""
    smallest = 1 / (draws + 1)
    power = f"{draws} matched control sets (smallest reachable p {smallest:.3f}); {width(effect)}"
    if nan_in(effect):
        return Judgement(I, "no estimate", power)
    if in_range(effect, lo, hi) == N:
        return Judgement(N, "interval outside the claimed range", power)
    if draws >= min_draws and p >= 0.05:
        return Judgement(N, f"no better than matched random heads (p = {p:.3f})", power)
    if draws < min_draws:
        return Judgement(I, f"underpowered: {draws} control sets, smallest p {smallest:.3f}", power)
    v, a, b = effect
    sign_ok = b < 0 if hi <= 0 else a > 0
    if in_range(effect, lo, hi) == S and sign_ok and p < 0.01:
        return Judgement(S, "", power, p=p)
    why = "interval includes zero" if not sign_ok else ("estimate outside the range" if not lo <= v <= hi
                                                      else f"controls p = {p:.3f} not below 0.01")
    return Judgement(I, why, power)


def share_above(k: int, n: int, half: float = 0.5) -> Verdict:
    """A share of runs: supported when its Wilson 95% lower bound is above ``half``, not supported when the
    upper bound is below it, else inconclusive."""
    _, a, b = wilson(k, n)
    if nan_in((0, a, b)):
        return I
    return S if a > half else N if b < half else I


def fisher_power(k1: int, n1: int, k2: int, n2: int) -> str:
    """Fisher's exact p for k1/n1 against k2/n2, and the fewest successes of n1 that would have reached
    p < 0.05 (one-sided, greater) against k2/n2."""
    if min(n1, n2) == 0:
        return "no runs to compare"
    p = fisher_p(k1, n1, k2, n2)
    need = next((k for k in range(n1 + 1) if fisher_p(k, n1, k2, n2) < 0.05), None)
    reach = (f"{need} of {n1} would have been needed for p < 0.05" if need is not None
             else f"no count of {n1} against {k2} of {n2} reaches p < 0.05")
    return f"Fisher's exact p = {p:.3f} (one-sided); {reach}"


def fisher_p(k1: int, n1: int, k2: int, n2: int) -> float:
    if min(n1, n2) == 0:
        return math.nan
    return float(fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="greater")[1])
