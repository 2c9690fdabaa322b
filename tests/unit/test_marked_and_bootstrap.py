"""The `marked` detector and the bootstrap helpers on hand-built inputs with known answers."""

import numpy as np
import pytest
import torch

from headlab.attention.routes import score_layer
from headlab.detectors import Batch, make, prepare_batch
from headlab.study.bootstrap import curve_cv_ci, mean_ci, ratio_ci


def run(attn, marked, causal=False, lengths=None):
    B, T = marked.shape
    lengths = lengths or [T] * B
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    b = Batch(torch.ones(B, T, dtype=torch.long), mask, causal)
    b.cache["marked"] = marked.float()
    det = make("marked")
    prepare_batch([det], b)
    return score_layer([det], attn, b)["marked"]


def test_head_attending_only_to_the_slash_scores_one_and_uniform_scores_one_over_t():
    T = 6
    marked = torch.zeros(1, T)
    marked[0, 2] = 1  # the '/' sits at position 2
    attn = torch.zeros(1, 3, T, T)
    attn[0, 0, :, 2] = 1.0                       # only '/'
    attn[0, 1] = 1.0 / T                         # uniform
    for i in range(T):                           # offset 3: i -> i-3 (rows 0..2 -> position 0)
        attn[0, 2, i, i - 3 if i >= 3 else 0] = 1.0
    s = run(attn, marked)
    assert s[0, 0] == pytest.approx(1.0)
    assert s[0, 1] == pytest.approx(1 / T)
    assert s[0, 2] == pytest.approx(1 / T)       # only query 5 reaches the '/' at 5 - 3


def test_marked_causal_can_see_and_undefined_without_target():
    T = 5
    marked = torch.zeros(2, T)
    marked[0, 2] = 1
    attn = torch.tril(torch.ones(T, T))
    attn = (attn / attn.sum(-1, keepdim=True)).expand(2, 1, T, T)
    s = run(attn, marked, causal=True)
    assert s[0, 0] == pytest.approx((1 / 3 + 1 / 4 + 1 / 5) / 3)
    assert torch.isnan(s[1, 0])


def test_bootstrap_intervals_contain_the_mean_and_shrink_with_n():
    rng = np.random.default_rng(0)
    small, big = rng.normal(1, 1, (20, 2)), rng.normal(1, 1, (2000, 2))
    m, lo, hi = mean_ci(small, seed=0)
    assert (lo <= m).all() and (m <= hi).all()
    m2, lo2, hi2 = mean_ci(big, seed=0)
    assert ((hi2 - lo2) < (hi - lo)).all()
    assert np.allclose(m2, 1, atol=0.1)


def test_ratio_of_paired_means():
    den = np.full((30, 1), 0.1) + np.random.default_rng(1).random((30, 1)) * 0.01
    r, lo, hi = ratio_ci(5 * den, den, seed=0)
    assert r[0] == pytest.approx(5.0) and lo[0] == pytest.approx(5.0) and hi[0] == pytest.approx(5.0)


def test_curve_cv_is_zero_for_flat_curves_and_positive_for_sloped():
    flat = np.ones((10, 7, 1))
    slope = np.tile(np.linspace(0.1, 0.9, 7)[None, :, None], (10, 1, 1))
    assert curve_cv_ci(flat, seed=0)[0][0] == pytest.approx(0.0)
    v, lo, hi = curve_cv_ci(slope, seed=0)
    assert v[0] == pytest.approx(np.std(np.linspace(0.1, 0.9, 7)) / 0.5)
