"""Phases (change points), emergence steps and early prediction, on trajectories with known answers."""

import numpy as np
import pytest

from headlab.formation.phases import emergence_step, phases
from headlab.formation.predict import RunData, early_prediction, fit_logistic, predict_proba, roc_auc
from headlab.formation.tracking import TrackResult

STEPS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]


def test_flat_rising_stable_trajectory_is_split_at_its_change_points():
    y = [0.1, 0.1, 0.11, 0.1, 0.1, 0.3, 0.5, 0.7, 0.9, 0.9, 0.91, 0.9]
    ph = phases(STEPS, y)
    assert [p.label for p in ph] == ["flat", "rising", "stable"]
    assert ph[1].start in (16, 32) and ph[2].start in (256, 512)


def test_noise_without_a_trend_is_one_flat_phase():
    rng = np.random.default_rng(0)
    assert [p.label for p in phases(STEPS, 0.2 + 0.005 * rng.standard_normal(12))] == ["flat"]


def test_emergence_step_requires_staying_above():
    y = [0.1, 0.6, 0.2, 0.3, 0.6, 0.7]
    assert emergence_step(STEPS[:6], y, 0.5) == 16
    assert emergence_step(STEPS[:6], [0.1] * 6, 0.5) is None


def test_roc_auc_and_logistic():
    y = np.array([0, 0, 1, 1])
    assert roc_auc(y, np.array([0.1, 0.2, 0.3, 0.4])) == 1.0
    assert roc_auc(y, np.array([0.4, 0.3, 0.2, 0.1])) == 0.0
    assert roc_auc(np.array([1, 1]), np.array([0.1, 0.2])) is None
    from sklearn.metrics import roc_auc_score  # the rank AUROC is sklearn's value, ties included

    rng = np.random.default_rng(3)
    for n in (3, 17, 200):
        labels = np.r_[0, 1, rng.integers(0, 2, n)]
        for score in (rng.normal(size=n + 2), rng.integers(0, 3, n + 2).astype(float)):
            assert roc_auc(labels, score) == pytest.approx(roc_auc_score(labels, score), abs=1e-12)
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    p = predict_proba(fit_logistic(X, y, l2=0.1), X)
    assert p[0] < 0.5 < p[3]


def _run(seed, n_steps=1000):
    """Synthetic run: heads whose early gradient share is high end up high; early scores are uninformative."""
    rng = np.random.default_rng(seed)
    L, H = 2, 8
    steps = [1, 10, 50, 100, 500, 1000]
    fate = rng.random((L, H)) < 0.4
    scores = np.full((len(steps), L, H), 0.1) + 0.01 * rng.standard_normal((len(steps), L, H))
    scores[-2:][:, fate] = 0.8
    sig_steps = [1, 50, 100]
    share = np.where(fate, 3.0, 1.0) * (1 + 0.1 * rng.random((L, H)))
    signals = {"logit_slash": np.broadcast_to(share, (3, L, H)).copy(), "logit_other": np.ones((3, L, H))}
    t = TrackResult(f"s{seed}", steps, L, H, {"slash_mass": scores})
    return RunData(f"s{seed}", t, sig_steps, signals, n_steps)


def test_early_prediction_uses_gradient_signals_and_beats_the_score_baseline():
    res = early_prediction([_run(s) for s in range(5)], "slash_mass", 0.5, early_fraction=0.1)
    assert res["n_heads"] == 80 and 0 < res["n_positive"] < 80
    assert res["early_model"]["roc_auc"] > 0.95
    assert res["early_score_alone"]["roc_auc"] < 0.8
    with pytest.raises(ValueError, match="at least 2 runs"):
        early_prediction([_run(0)], "slash_mass", 0.5)


def test_prediction_statistics_give_the_declared_rule_its_gains_with_intervals():
    from headlab.formation.predict import prediction_statistics
    from headlab.rulebook import BOOK

    runs = [_run(s) for s in range(3)]
    stats = prediction_statistics(runs, "slash_mass", 0.5, fractions=(0.005, 0.1), draws=300)
    assert "0.005" in stats["left_out"] and "fewer than 2 checkpoints" in stats["left_out"]["0.005"]
    gain, lo, hi = stats["gains"]["0.1"]
    assert lo <= gain <= hi and lo > 0  # the gradient signal carries what the early score does not
    assert stats["level"] == pytest.approx(0.975)
    assert BOOK["formation.prediction"].judge(stats).verdict.value == "supported"
    flat = [RunData(r.name, r.track, r.signal_steps, {k: np.ones_like(v) for k, v in r.signals.items()},
                    r.total_steps) for r in runs]  # gradients that say nothing: no gain
    gain, lo, hi = prediction_statistics(flat, "slash_mass", 0.5, fractions=(0.1,), draws=300)["gains"]["0.1"]
    assert lo <= 0.05 and BOOK["formation.prediction"].judge(
        prediction_statistics(flat, "slash_mass", 0.5, fractions=(0.1,), draws=300)).verdict.value != "supported"


def test_the_layer_index_and_random_baselines_stand_beside_the_model():
    """Where a head's fate is its layer, the layer-index baseline predicts it and the scores carry nothing more;
    a random score's AUROC is near one half."""
    from headlab.formation.predict import prediction_statistics

    def by_layer(seed):
        r = _run(seed)
        scores = r.track.scores["slash_mass"].copy()
        scores[-2:] = 0.1
        scores[-2:, 1] = 0.8  # every head of layer 1 ends specialized, none of layer 0
        t = TrackResult(r.name, r.track.steps, 2, 8, {"slash_mass": scores})
        return RunData(r.name, t, r.signal_steps, r.signals, r.total_steps)

    runs = [by_layer(s) for s in range(3)]
    res = early_prediction(runs, "slash_mass", 0.5, early_fraction=0.1)
    assert res["layer_index"]["roc_auc"] == 1.0 and 0.3 < res["random"]["roc_auc"] < 0.7
    aurocs = prediction_statistics(runs, "slash_mass", 0.5, fractions=(0.1,), draws=50)["aurocs"]["0.1"]
    assert set(aurocs) == {"early_model", "early_score_alone", "layer_index", "score_and_layer", "random"}
    assert aurocs["layer_index"] == 1.0


def _naive_sse(x, y):
    """One least-squares fit per segment (numpy's lstsq): the computation LineCost replaces."""
    if len(x) < 2:
        return 0.0
    A = np.stack([x, np.ones_like(x)], 1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    return float(((A @ coef - y) ** 2).sum())


def _naive_fit(x, y, min_gain):
    n = len(x)
    one = _naive_sse(x, y)
    best = (one, [(0, n - 1)])
    if n >= 4:
        for i in range(2, n - 1):
            e = _naive_sse(x[:i], y[:i]) + _naive_sse(x[i:], y[i:])
            if e < best[0] and one - e >= min_gain * one:
                best = (e, [(0, i - 1), (i, n - 1)])
    if n >= 6:
        two = best
        for i in range(2, n - 3):
            for j in range(i + 2, n - 1):
                e = _naive_sse(x[:i], y[:i]) + _naive_sse(x[i:j], y[i:j]) + _naive_sse(x[j:], y[j:])
                if e < best[0] and two[0] - e >= min_gain * one:
                    best = (e, [(0, i - 1), (i, j - 1), (j, n - 1)])
    return best


@pytest.mark.parametrize("seed", range(12))
def test_prefix_sum_segments_find_the_same_breakpoints_as_one_fit_per_segment(seed):
    from headlab.formation.phases import LineCost, _fit
    from headlab.formation.stages import best_split

    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    x = np.log10(np.sort(rng.choice(np.arange(1, 10_000), n, replace=False)).astype(float))
    y = np.cumsum(rng.normal(0, 0.1, n)) + (seed % 3) * np.clip(x - x.mean(), 0, None)
    cost = LineCost(x, y)
    for a, b in [(0, n), (0, 2), (1, n - 1), (n // 2, n)]:
        assert float(cost(a, b)) == pytest.approx(_naive_sse(x[a:b], y[a:b]), rel=1e-7, abs=1e-9)
    want_e, want = _naive_fit(x, y, 0.1)
    got = _fit(x, y, 0.1)
    got_e = sum(_naive_sse(x[a:b + 1], y[a:b + 1]) for a, b in got)
    assert got == want or got_e == pytest.approx(want_e, rel=1e-9, abs=1e-12)  # the same split, or an equal one
    for k in (1, 2, 3):
        e, cuts = best_split(x, y, k)
        edges = (0, *cuts, n)
        if cuts or k == 1:
            assert e == pytest.approx(sum(_naive_sse(x[a:b], y[a:b]) for a, b in zip(edges, edges[1:])),
                                      rel=1e-7, abs=1e-9)


def test_phases_of_a_long_run_signal_find_its_step():
    """2,000 gradient-signal steps (a 100k-step run, every 50): the search over two breakpoints covers them all
    (one fit per segment would take hours here)."""
    from headlab.formation.phases import phases

    steps = list(range(50, 100_001, 50))
    y = np.where(np.arange(len(steps)) < 200, 0.1, 0.8) + 0.01 * np.random.default_rng(0).standard_normal(len(steps))
    ph = phases(steps, y)
    assert len(ph) == 2 and ph[1].start == 10_050 and ph[1].y0 > 0.7  # the jump, found among 2,000 steps
