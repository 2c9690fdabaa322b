"""The pairwise order statistic (headlab.retrieval.order) against a naive count and an enumerated permutation
null, and the rule's three readings."""

from __future__ import annotations

import itertools

import numpy as np

from headlab.retrieval.order import cell_stats, concordance, pair_counts, role_steps, shared_roles
from headlab.rulebook import BOOK, Verdict
from headlab.rulebook.retrieval import pair_order

RUNS = [{"a": 250, "b": 500, "c": 500, "x": 9}, {"a": 250, "b": 750, "c": 500}, {"a": 500, "b": 250, "c": 750}]


def test_pairs_count_ties_as_ties_over_the_roles_every_run_has() -> None:
    roles = shared_roles(RUNS)
    assert roles == ["a", "b", "c"]  # x is in one run only
    pairs = {(p["a"], p["b"]): (p["before"], p["after"], p["ties"]) for p in pair_counts(RUNS, roles)}
    for (x, y), got in pairs.items():  # the naive count
        want = (sum(r[x] < r[y] for r in RUNS), sum(r[x] > r[y] for r in RUNS), sum(r[x] == r[y] for r in RUNS))
        assert got == want
    assert pairs[("b", "c")] == (1, 1, 1)
    strict = sum(b + a for b, a, _ in pairs.values())
    assert concordance(np.array([[r[x] for x in roles] for r in RUNS], float)) == \
        sum(abs(b - a) for b, a, _ in pairs.values()) / strict


def test_the_permutation_p_is_near_the_exact_one() -> None:
    """Two runs, three roles with distinct steps: the exact p enumerates every pair of orderings."""
    runs = [{"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3}]
    steps = np.array([[1, 2, 3], [1, 2, 3]], float)
    observed = concordance(steps)
    perms = [np.array(p, float) for p in itertools.permutations([1, 2, 3])]
    exact = np.mean([concordance(np.stack([p, q])) >= observed for p in perms for q in perms])
    got = cell_stats(runs)["p"]
    assert abs(got - exact) < 0.03 and exact == 1 / 6


def test_role_steps_take_each_roles_first_head() -> None:
    analysis = {"labels": [["query→prev", "query→prev"], ["ref→def-ref", "-"]],
                "emergence": {"emerged_at": {"0.0": 500, "0.1": 250, "1.0": 750, "1.1": None}}}
    assert role_steps(analysis) == {"L0:query→prev": 250, "L1:ref→def-ref": 750}


def test_the_rule_reads_a_fixed_order_no_order_and_too_few() -> None:
    assert BOOK["retrieval.pair-order"].data == ("retrieval/order/**/analyze.json",)  # new seeds only
    fixed = [{"a": 250, "b": 500, "c": 750} for _ in range(5)]
    flipped = [{"a": 250, "b": 500, "c": 750}, {"a": 750, "b": 500, "c": 250}] * 2 + [{"a": 250, "b": 500, "c": 750}]
    judge = lambda cells: pair_order({"cells": cells}).verdict  # noqa: E731
    assert judge({"one": cell_stats(fixed), "two": cell_stats(fixed)}) == Verdict.SUPPORTED
    assert judge({"one": cell_stats(fixed), "two": cell_stats(flipped)}) == Verdict.NOT_SUPPORTED
    assert judge({"one": cell_stats(fixed)}) == Verdict.INCONCLUSIVE
    assert judge({"one": cell_stats(fixed), "two": cell_stats(fixed[:4])}) == Verdict.INCONCLUSIVE
