import inspect
import math

import pytest

from headlab.census.stats import wilson
from headlab.rulebook.decide import beyond, in_range
from headlab.rulebook.slash import CLAIMS


@pytest.mark.parametrize("iv,expected", [
    ((0.17, 0.12, 0.22), "supported"),
    ((0.02, 0.01, 0.05), "not supported"),
    ((0.10, 0.05, 0.16), "inconclusive"),
    ((0.30, 0.25, 0.40), "not supported"),
    ((math.nan, 0, 1), "inconclusive"),
])
def test_range_rule(iv, expected):
    assert in_range(iv, 0.15, 0.20) == expected


def test_bound_rule_both_directions():
    assert beyond((0.9, 0.85, 0.95), 0.8, at_least=True) == "supported"
    assert beyond((0.5, 0.4, 0.7), 0.8, at_least=True) == "not supported"
    assert beyond((0.8, 0.7, 0.9), 0.8, at_least=True) == "inconclusive"
    assert beyond((0.1, 0.05, 0.2), 0.25, at_least=False) == "supported"
    assert beyond((0.4, 0.3, 0.5), 0.25, at_least=False) == "not supported"


def test_wilson_interval():
    p, lo, hi = wilson(0, 72)
    assert p == 0 and lo == 0 and 0.04 < hi < 0.06
    p, lo, hi = wilson(36, 72)
    assert p == 0.5 and lo < 0.5 < hi
    assert all(math.isnan(x) for x in wilson(0, 0))
    for k, n in [(3, 17), (12, 144), (1, 2)]:  # against the closed form of the Wilson score interval
        z, p = 1.959963984540054, k / n
        mid, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (
            1 + z * z / n)
        assert wilson(k, n)[1:] == pytest.approx((mid - half, mid + half), abs=1e-9)


def test_claim_numbers_live_only_in_the_claim_definitions():
    """The write-up's numbers are the claims under test; the rules read them from CLAIMS."""
    assert CLAIMS[1].bounds == (0.15, 0.20) and CLAIMS[2].bounds == (5.0, 8.0)
    import headlab.study.claim_rows as mod

    body = inspect.getsource(mod.measure) + inspect.getsource(mod.cross_model) + inspect.getsource(mod.ablation_row)
    for number in ("0.15", "0.2", "5.0", "8.0", "15", "20", "2.0", "3.0"):
        assert number not in body
    assert CLAIMS[7].bounds == (-3.0, -2.0)  # "costs 2-3 points": the signed change lies in [-3, -2]


def _naive_passes(seq, threshold, k):
    """The strict rule by hand: k samples in a row above the threshold (NaN samples skipped)."""
    run = best = 0
    for x in seq:
        if x != x:
            continue
        run = run + 1 if x > threshold else 0
        best = max(best, run)
    return best >= k


def test_placebo_counts_against_a_naive_loop():
    import numpy as np

    from headlab.study.characterize import placebo_counts

    rng = np.random.default_rng(0)
    n, L, H, symbols, extra = 12, 2, 3, ["-", "."], [";", "#"]
    mass = {"controls": rng.uniform(0.3, 0.8, (n * (1 + len(symbols)), L, H)),
            "placebos": rng.uniform(0.3, 0.8, (n * (1 + len(extra)), L, H))}
    got = placebo_counts(mass, n, symbols, symbols + extra, 0.5, 3)
    for suite, syms in (("controls", symbols), ("placebos", extra)):
        m = mass[suite].reshape(n, 1 + len(syms), L, H)
        for i, sym in enumerate(syms):
            want = sum(_naive_passes(m[:, 1 + i, l, h], 0.5, 3) for l in range(L) for h in range(H))
            assert got[sym] == want, sym
    one_extra = {**mass, "placebos": mass["placebos"].reshape(n, 3, L, H)[:, :2].reshape(-1, L, H)}
    assert set(placebo_counts(one_extra, n, symbols, ["-", ";"], 0.5, 3)) == {"-", ";"}  # only the placebos asked for


def test_a_model_path_ending_in_dots_names_a_folder_inside_out(tmp_path, monkeypatch):
    """languages/claims write OUT/NAME/: a path ending in .. or . must not make NAME climb out of OUT."""
    from headlab.study.claims import folder_name, folder_names

    (tmp_path / "models" / "m").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "models" / "m")
    assert folder_name("..") == "models" and folder_name(".") == "m" and folder_name("./") == "m"
    assert folder_name(str(tmp_path / "models" / "m" / "..")) == "models"
    assert all(n not in ("", ".", "..") for n in folder_names(["..", ".", "a/..", "b/.."]))


def test_a_saved_ablation_with_more_control_sets_is_reused_not_one_with_fewer(tmp_path):
    import json
    import shutil
    from pathlib import Path

    from headlab.study.claims_parts import saved_ablation

    committed = Path(__file__).resolve().parents[2] / "results" / "study" / "claims" / "smollm2-135m" / "ablate.json"
    shutil.copy(committed, tmp_path / "ablate.json")
    d = json.loads(committed.read_text())
    draws, heads = d["control"]["draws"], d["heads"]
    assert saved_ablation(tmp_path, d["model"], heads, draws, d["n_samples"]) is not None
    assert saved_ablation(tmp_path, d["model"], heads, max(1, draws // 10), d["n_samples"]) is not None
    assert saved_ablation(tmp_path, d["model"], heads, draws + 1, d["n_samples"]) is None
