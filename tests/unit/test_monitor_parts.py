"""The head monitor's parts that need no model: the baseline's features, the derived kinds, the profile math."""

import random

import numpy as np
import pytest

from headlab.errors import HeadlabError
from headlab.monitor.evaluate import _auroc, _derived, char_features
from headlab.monitor.profile import Profile, fit_profile, held_out


def test_character_classes_of_a_known_string() -> None:
    letters, digits, space, punct, upper, non_ascii, word = char_features("Ab 1/ é")
    assert (letters, digits, space, punct, upper) == (3 / 7, 1 / 7, 2 / 7, 1 / 7, 1 / 7)
    assert non_ascii == 1 / 7 and word == pytest.approx((2 + 2 + 1) / 3)


def test_derived_kinds_change_what_they_say() -> None:
    prose = ["the quick brown fox jumps over the lazy dog near the river bank today"]
    rng = random.Random(0)
    shuffled = _derived(prose, "shuffled", rng, [])[0]
    assert sorted(shuffled.split()) == sorted(prose[0].split()) and shuffled != prose[0]
    assert _derived(prose, "boilerplate", rng, [])[0].count("the quick brown fox") == 8
    assert _derived(prose, "paths", rng, [])[0].count("/") >= 6
    assert set(_derived(prose, "random-tokens", rng, ["xa", "yb"])[0].split()) <= {"xa", "yb"}


def test_auroc_interval_holds_its_point() -> None:
    rng = np.random.default_rng(0)
    point, lo, hi = _auroc(rng.normal(0, 1, 200), rng.normal(1, 1, 200), rng)
    assert 0.7 < point < 0.85 and lo <= point <= hi


def test_profile_flags_about_its_false_positive_rate_on_fresh_reference_data() -> None:
    rng = np.random.default_rng(1)
    docs = [f"d{i}" for i in range(3000)]
    mix = rng.normal(size=(5, 5))  # correlated features

    def draw(n: int) -> np.ndarray:
        x = rng.normal(size=(n, 5)) @ mix
        x[:, 4] = 0.0  # a constant feature: scale 1, no division by zero
        return x

    X = draw(3000)
    prof = fit_profile(X, docs, [f"f/{i}" for i in range(5)], 0.05, model="m", corpus=["c"], settings={})
    assert prof.n_calibration == sum(held_out(d) for d in docs)
    fresh_rate = (prof.scores(draw(5000)) > prof.threshold).mean()  # documents the profile never saw
    assert 0.5 * prof.fpr <= fresh_rate <= 2 * prof.fpr
    shifted = X.copy()
    shifted[:, 0] += 10 * np.asarray(prof.scale)[0]
    assert (prof.scores(shifted) > prof.threshold).mean() > 0.9
    assert Profile.from_json(prof.to_json()) == prof
    with pytest.raises(HeadlabError, match="too few"):
        fit_profile(X[:20], docs[:20], ["a"] * 5, 0.05, model="m", corpus=["c"], settings={})
