import re

import numpy as np
import pytest

from headlab.census.stats import ConsecutiveRule, RunningMoments


def test_running_moments_match_numpy_in_blocks_with_nan():
    rng = np.random.default_rng(0)
    data = rng.random((50, 2, 3))
    data[rng.random(data.shape) < 0.2] = np.nan
    m = RunningMoments((2, 3), threshold=0.5)
    for s in range(0, 50, 7):
        m.update(data[s:s + 7])
    np.testing.assert_allclose(m.mean, np.nanmean(data, 0))
    np.testing.assert_allclose(m.std, np.nanstd(data, 0), atol=1e-12)
    np.testing.assert_allclose(m.frac_above, np.nansum(data > 0.5, 0) / (~np.isnan(data)).sum(0))


def test_moments_undefined_when_no_sample():
    m = RunningMoments((1,))
    m.update(np.array([[np.nan]]))
    assert np.isnan(m.mean[0]) and np.isnan(m.std[0])


@pytest.mark.parametrize("seq,k,passed", [
    ([0.6, 0.7, 0.8], 3, True),
    ([0.6, 0.7, 0.4, 0.8, 0.9], 3, False),           # a defined sample below θ breaks the run
    ([0.6, np.nan, 0.7, np.nan, 0.8], 3, True),      # samples without '/' do not break it
    ([0.5, 0.5, 0.5], 3, False),                     # strictly more than θ
    ([0.9, 0.1, 0.9, 0.9, 0.9, 0.1], 3, True),
])
def test_consecutive_rule(seq, k, passed):
    r = ConsecutiveRule((1,), 0.5, k)
    r.update(np.array(seq)[:, None][:2])
    r.update(np.array(seq)[:, None][2:])  # split across blocks: the run carries over
    assert bool(r.passed[0]) is passed


def test_a_checkpoint_without_its_fingerprint_is_damaged_not_an_internal_error(tmp_path) -> None:
    import json

    from headlab.census.accumulator import Census
    from headlab.census.stream import CKPT_JSON, load_checkpoint
    from headlab.distributed import world
    from tests.support import says

    (tmp_path / CKPT_JSON).write_text(json.dumps({"position": 64, "parts": 1}))
    with says("damaged .*lacks fingerprint, sha256"):
        assert load_checkpoint(tmp_path, Census((1, 1), 0.5, 3), world(), "print") is None
    (tmp_path / CKPT_JSON).write_text("[1, 2]")
    with says("damaged"):
        assert load_checkpoint(tmp_path, Census((1, 1), 0.5, 3), world(), "print") is None


@pytest.mark.parametrize("size,every,start,want", [
    (128, 40, 0, [40, 80, 120, 130]),     # the interval in samples, not rounded up to a round of 128
    (16, 40, 0, [16, 32, 40, 56, 72, 80, 96, 112, 120, 130]),
    (16, 0, 0, [16, 32, 48, 64, 80, 96, 112, 128, 130]),
    (128, 40, 80, [120, 130]),            # a resume at a checkpoint cuts where the uninterrupted stream did
])
def test_a_round_ends_at_every_checkpoint_mark(size: int, every: int, start: int, want: list[int]) -> None:
    from headlab.census.stream import rounds
    from headlab.corpus import Sample

    stream = [Sample(i, "d", i, (1, 2)) for i in range(130)]
    ends = [r[-1].index + 1 for r in rounds(stream, size, start, every)]
    assert ends == want


@pytest.mark.parametrize("name, value, said", [
    ("plugin-score", np.inf, "detector 'plugin-score' gave the score inf at layer 1 on sample 7 (doc:b)"),
    ("previous-token", 1.5, "detector 'previous-token' gave the score 1.5 at layer 1 on sample 7 (doc:b), "
                            "outside [0, 1]"),
    ("entropy", -0.5, "outside [0, inf]"),
])
def test_a_score_that_is_infinite_or_outside_its_detectors_bounds_is_refused_where_it_is_measured(name, value, said):
    from headlab.census.accumulator import Census
    from headlab.corpus import Sample
    from headlab.errors import HeadlabError

    samples = [Sample(6, "doc:a", 0, (1, 2)), Sample(7, "doc:b", 0, (1, 2))]
    block = np.full((2, 2, 3), 0.25)
    block[0, 0, 0] = np.nan  # undefined on a sample: not refused
    census = Census((2, 3), 0.5, 3)
    census.add_scores(samples, {name: block.copy()})
    block[1, 1, 2] = value
    with pytest.raises(HeadlabError, match=re.escape(said)):
        census.add_scores(samples, {name: block})
