"""A retrieval circuit's controls: headlab ablate's matched sets where a layer allows them, else distinct sets of
the same sizes per layer that may share labelled heads, never the circuit; none only where no other set exists."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from headlab.ablation.experiment import matched_controls
from headlab.errors import HeadlabError
from headlab.retrieval.controls import ANYWHERE, MATCHED, OVERLAPPING, compared, control_sets


def _key(s: dict[int, list[int]]) -> tuple:
    return tuple((l, tuple(sorted(hs))) for l, hs in sorted(s.items()))


def test_where_a_layer_allows_it_the_sets_are_headlab_ablates():
    got, how = control_sets({0: [1], 2: [0, 3]}, 3, 4, 10, random.Random(5))
    assert how == MATCHED and got == matched_controls({0: [1], 2: [0, 3]}, 4, 10, random.Random(5))


def test_a_mostly_labelled_layer_gets_every_other_set_of_its_size():
    """3 of 4 heads labelled (the committed analyses' usual layer): the 3 other sets of 3, each once."""
    got, how = control_sets({0: [0, 1, 2]}, 1, 4, 10, random.Random(0))
    assert how == OVERLAPPING
    assert sorted(_key(s) for s in got) == [((0, c),) for c in [(0, 1, 3), (0, 2, 3), (1, 2, 3)]]
    # a whole layer beside a partly labelled one: the whole layer is in every set
    got, _ = control_sets({0: [0, 1, 2, 3], 1: [1, 2, 3]}, 2, 4, 10, random.Random(0))
    assert len(got) == 3 and all(s[0] == [0, 1, 2, 3] and s[1] != [1, 2, 3] for s in got)


def test_drawn_sets_are_distinct_sized_as_the_circuit_and_never_it():
    target = {0: [0, 1, 2, 3, 4], 1: [3, 4, 5, 6]}  # 8 heads a layer: too many sets to list, so drawn
    a, how = control_sets(target, 2, 8, 40, random.Random(2))
    b, _ = control_sets(target, 2, 8, 40, random.Random(2))
    naive = {(c0, c1) for c0 in itertools.combinations(range(8), 5) for c1 in itertools.combinations(range(8), 4)}
    assert how == OVERLAPPING and a == b and len({_key(s) for s in a}) == 40
    assert all((tuple(sorted(s[0])), tuple(sorted(s[1]))) in naive for s in a)
    assert _key(target) not in {_key(s) for s in a}


def test_a_circuit_of_whole_layers_is_held_against_as_many_heads_anywhere():
    """Layers 0 and 1 of three labelled whole (a committed L3 analysis): sets of 8 of the 12 heads, never the
    circuit; every one of the C(12, 8) - 1 where fewer than the draws exist."""
    got, how = control_sets({0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}, 3, 4, 10, random.Random(0))
    assert how == ANYWHERE and len({_key(s) for s in got}) == 10
    assert all(sum(map(len, s.values())) == 8 and _key(s) != ((0, (0, 1, 2, 3)), (1, (0, 1, 2, 3))) for s in got)
    small, how = control_sets({0: [0, 1]}, 2, 2, 10, random.Random(0))  # layer 0 of a 2 x 2 model, whole
    assert how == ANYWHERE and len({_key(s) for s in small}) == math.comb(4, 2) - 1


def test_the_whole_model_has_no_control_and_zero_draws_are_refused():
    assert control_sets({0: [0, 1, 2, 3]}, 1, 4, 10, random.Random(0))[0] == []
    assert control_sets({0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}, 2, 4, 10, random.Random(0))[0] == []
    with pytest.raises(HeadlabError, match="draws=0.*--draws"):
        control_sets({0: [1]}, 1, 4, 0, random.Random(0))


def test_the_comparison_against_a_naive_count():
    rng = np.random.default_rng(0)
    base = rng.random(200) < 0.9
    ctrl = [base & (rng.random(200) < p) for p in (0.95, 0.9, 0.5, 0.85)]  # one control costs more than the target
    target = base & (rng.random(200) < 0.7)
    c = compared(base, target, ctrl, OVERLAPPING, seed=0)
    d_t = target.mean() - base.mean()
    d_c = [x.mean() - base.mean() for x in ctrl]
    assert c["delta_target"] == pytest.approx(d_t) and c["per_set"] == pytest.approx(d_c)
    assert c["p_value"] == (1 + sum(d <= d_t for d in d_c)) / (1 + len(d_c)) == 2 / 5
    assert c["difference"] == pytest.approx(d_t - np.mean(d_c)) and c["matched"] == OVERLAPPING
    lo, hi = c["interval"]
    assert lo <= c["difference"] <= hi


def test_a_planted_effect_is_told_from_a_null():
    base = np.ones(100, bool)
    ctrl = [np.r_[np.zeros(k, bool), np.ones(100 - k, bool)] for k in range(1, 11)]  # each costs 1-10%
    planted = compared(base, np.zeros(100, bool), ctrl, MATCHED, seed=1)  # the circuit costs everything
    null = compared(base, ctrl[4], ctrl, MATCHED, seed=1)  # the circuit is one of its controls
    assert planted["p_value"] == 1 / 11 and planted["interval"][1] < 0
    assert null["p_value"] > 0.4 and null["interval"][0] <= 0 <= null["interval"][1]
    assert compared(base, base, [], MATCHED, seed=0) is None
