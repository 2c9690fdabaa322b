"""headlab train's fast parts: checkpoint schedule and config errors (runs: integration/test_train_runs.py)."""

import pytest

from headlab.errors import HeadlabError
from headlab.training import from_dict
from headlab.training.checkpoint import schedule


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
    with pytest.raises(HeadlabError, match="repeat_share must be in"):
        from_dict({"data": {"repeat_share": -0.1}})


def test_repeated_windows_end_with_a_copy_of_an_earlier_span_at_varying_distance():
    from headlab.training.data import fingerprint, repeat_spans

    rows = [tuple(range(1000 * i, 1000 * i + n)) for i, n in enumerate(list(range(2, 42)) * 2)]  # distinct tokens
    out = repeat_spans(rows, 0.25, seed=1)
    assert sum(a != b for a, b in zip(rows, out)) == 20
    distances = set()
    for r, o in zip(rows, out):
        assert len(o) == len(r)
        if o == r:
            continue
        a = next(i for i in range(len(r)) if o[i] != r[i])  # where the copy starts
        assert a >= (len(r) + 1) // 2 and o[:a] == r[:a]
        b = r.index(o[a])
        assert o[a:] == r[b : b + len(r) - a]  # a contiguous span of the head
        distances.add(a - b)
    assert len(distances) > 5  # no fixed offset to learn instead of copying
    assert repeat_spans(rows, 0.25, seed=1) == out and repeat_spans(rows, 0.0, seed=1) == rows
    assert repeat_spans(rows, 0.25, seed=2) != out
    cfg = from_dict({}).data
    assert fingerprint(cfg, 0) != fingerprint(from_dict({"data": {"repeat_share": 0.5}}).data, 0)


def test_named_configs_ship_with_the_package(tmp_path, monkeypatch) -> None:
    from headlab.errors import HeadlabError
    from headlab.training.config import CONFIGS_DIR, load_config, named_configs

    names = named_configs()
    assert {"smoke", "study", "seeds", "induce", "scale/xs"} <= set(names)
    assert all(p.is_relative_to(CONFIGS_DIR) for p in names.values())
    monkeypatch.chdir(tmp_path)  # no checkout here: names (and configs/ paths) still resolve
    assert load_config("smoke") == load_config("configs/smoke.toml") == load_config(names["smoke"])
    (tmp_path / "smoke").write_text("[optim]\nsteps = 3\n")  # a file of that name wins over the named config
    assert load_config("smoke").optim.steps == 3
    with pytest.raises(HeadlabError, match="is not a named config .*smoke"):
        load_config("smokey")
