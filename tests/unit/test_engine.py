"""The streaming path on tiny real-architecture models: batch-size invariance and padding."""

import numpy as np
import pytest

from headlab.census.engine import score_samples
from headlab.corpus import Sample
from headlab.detectors import make

from ..support import random_samples
from .tiny import Slash, tiny

_samples = random_samples


@pytest.mark.parametrize("kind", ["llama", "bert", "mpnet"])
def test_scores_do_not_depend_on_batch_size_or_padding(kind):
    lm = tiny(kind)
    Slash(lm)
    names = ["token", "offset", "previous-token", "duplicate-token", "induction", "sink"]
    runs = {}
    for bs in (1, 4):
        dets = [make(n) for n in names]
        chunks = list(score_samples(lm, dets, _samples(), batch_size=bs))
        runs[bs] = {n: np.concatenate([c[1][n] for c in chunks]) for n in names}
        order = [s.index for c in chunks for s in c[0]]
        assert order == list(range(11))  # seeded order is kept
    for n in names:
        assert runs[1][n].shape[:3] == (11, lm.facts.n_layers, lm.facts.n_heads)
        np.testing.assert_allclose(runs[1][n], runs[4][n], atol=2e-5, equal_nan=True)
    tok = runs[1]["token"]
    assert np.isnan(tok[1::2]).all() and not np.isnan(tok[0::2]).any()  # undefined without a target


def test_too_long_sample_is_a_clear_error():
    lm = tiny("llama")
    Slash(lm)
    from headlab.errors import HeadlabError

    with pytest.raises(HeadlabError, match="exceeds"):
        list(score_samples(lm, [make("sink")], [Sample(0, "x", 0, tuple([5] * 200))]))
