"""headlab train's fast parts: checkpoint schedule and config errors (runs: integration/test_train_runs.py)."""

import pytest

from headlab.errors import HeadlabError
from headlab.train import from_dict
from headlab.train.checkpoint import schedule


def test_schedule_is_log_spaced_early_then_linear():
    s = schedule(2000, early_points=8, early_fraction=0.1, every=500)
    assert s[0] == 1 and s[-1] == 2000 and s == sorted(set(s))
    early = [x for x in s if x <= 200]
    assert len(early) >= 6 and early[-1] == 200
    assert [x for x in s if x > 200] == [500, 1000, 1500, 2000]


def test_config_errors_are_one_line():
    with pytest.raises(HeadlabError, match="unknown key"):
        from_dict({"optim": {"stepz": 3}})
    with pytest.raises(HeadlabError, match="unknown section"):
        from_dict({"optimizer": {}})
    with pytest.raises(HeadlabError, match="exceeds model.max_length"):
        from_dict({"data": {"window": 512}, "model": {"max_length": 64}})
