"""Matched control sets are drawn without replacement: a set run twice would count one control twice."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from headlab.ablation.experiment import matched_controls
from headlab.errors import HeadlabError


def _key(s: dict[int, list[int]]) -> tuple:
    return tuple((l, tuple(sorted(hs))) for l, hs in sorted(s.items()))


def test_where_fewer_sets_exist_than_draws_every_one_is_run_once():
    """Head 0.2 of a 12-head layer has 11 matched sets (the probe's case: 50 draws held 11 distinct values)."""
    sets = matched_controls({0: [2]}, 12, 50, random.Random(0))
    assert len(sets) == 11 and len({_key(s) for s in sets}) == 11
    assert all(2 not in s[0] and len(s[0]) == 1 for s in sets)
    # two layers: the product of each layer's choices, counted by a naive enumeration
    target = {1: [0, 1], 3: [5]}
    naive = {(tuple(a), tuple(b)) for a in itertools.combinations(range(2, 6), 2)
             for b in itertools.combinations([h for h in range(6) if h != 5], 1)}
    got = matched_controls(target, 6, 1000, random.Random(1))
    assert {(tuple(sorted(s[1])), tuple(s[3])) for s in got} == naive and len(got) == len(naive) == math.comb(4, 2) * 5


def test_where_more_exist_the_draws_are_distinct_and_reproducible():
    target = {0: [1, 2], 4: [7]}
    a, b = (matched_controls(target, 12, 200, random.Random(3)) for _ in range(2))
    assert a == b and len({_key(s) for s in a}) == 200
    assert all(not set(s[l]) & set(hs) and len(s[l]) == len(hs) for s in a for l, hs in target.items())


def test_a_layer_without_enough_other_heads_is_refused():
    with pytest.raises(HeadlabError, match="layer 0: not enough other heads"):
        matched_controls({0: [0, 1, 2]}, 4, 10, random.Random(0))
