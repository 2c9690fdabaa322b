"""``auto`` times the routes that serve a scan on its own batches, keeps the faster, caches the seconds, and
changes no score."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headlab import scan
from headlab.census import calibration
from headlab.census.calibration import COSTS_FILE, bucket

TEXTS = [f"text {i} with a/b and " + "more words " * (i % 5) for i in range(12)]


@pytest.fixture(scope="module")
def lm():
    from headlab.nn import ModelConfig, Transformer, as_loaded, train_bpe

    tok = train_bpe(TEXTS, 300)
    return as_loaded(Transformer(ModelConfig(vocab_size=len(tok), n_layers=2, n_heads=2, d_model=16)), tok, "tiny")


@pytest.fixture
def costs(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(calibration, "MIN_BATCHES", 1)  # the 4 batches of a _scan are worth timing here
    return tmp_path / COSTS_FILE


@pytest.fixture
def measured(monkeypatch):
    calls: list[tuple[str, ...]] = []
    real = calibration._measure

    def counting(routes, make, run):
        calls.append(tuple(routes))
        return real(routes, make, run)

    monkeypatch.setattr(calibration, "_measure", counting)
    return calls


def _scan(lm, **kw):
    return scan(lm, TEXTS, max_samples=None, batch_size=4, max_length=16, progress=False, **kw)


def test_auto_equals_eager_and_measures_each_shape_once_per_machine(lm, costs, measured):
    ref = _scan(lm, route="eager")
    got = _scan(lm)
    assert got.settings["route"] == "auto" and "fused and eager" in got.settings["route_reason"]
    for name, m in ref.means.items():
        np.testing.assert_allclose(got.means[name], m, atol=1e-5, rtol=0, equal_nan=True, err_msg=name)
    by_shape = got.settings["route_by_shape"]
    assert measured == [("fused", "eager")] * len(by_shape) and by_shape
    for c in by_shape.values():
        assert c["route"] == min(c["seconds"], key=c["seconds"].get) and c["why"] == "measured now"
    stored = json.loads(costs.read_text())
    assert [set(v) for v in stored.popitem()[1].values()] == [{"fused", "eager"}] * len(by_shape)
    again = _scan(lm)  # a second scan of the same shapes reads the costs and times nothing
    assert len(measured) == len(by_shape) and all(c["why"].startswith("measured before")
                                                  for c in again.settings["route_by_shape"].values())
    assert "route: auto -> " in again.table()


@pytest.mark.parametrize("cheaper", ["fused", "eager"])
def test_the_cheaper_recorded_route_is_taken(lm, costs, measured, cheaper):
    first = _scan(lm)
    data = json.loads(costs.read_text())
    for shapes in data.values():
        for c in shapes.values():
            c.update({"fused": 2.0, "eager": 1.0} if cheaper == "eager" else {"fused": 1.0, "eager": 2.0})
    costs.write_text(json.dumps(data))
    got = _scan(lm).settings["route_by_shape"]
    assert set(got) == set(first.settings["route_by_shape"]) and {c["route"] for c in got.values()} == {cheaper}


def test_eager_is_not_timed_beyond_the_block_budget(lm, costs, measured):
    got = _scan(lm, chunk_mb=1e-3).settings["route_by_shape"]  # one layer's 4 x 2 x 16 x 16 floats: 8 KB
    assert measured == [] and {c["route"] for c in got.values()} == {"fused"}
    assert all("block budget" in c["why"] for c in got.values())


def test_an_unreadable_cost_file_is_measured_again_and_rewritten(lm, costs, measured):
    costs.write_text("{not json")
    _scan(lm)
    assert measured and isinstance(json.loads(costs.read_text()), dict)


@pytest.mark.parametrize("short_t,route,why", [
    (128, "eager", "batches of windows up to 128 tokens score faster on eager"),
    (8, "fused", "the kernel route's memory stays flat"),
])
def test_a_shape_with_too_few_batches_to_repay_its_timing_takes_a_route_by_its_length(lm, costs, measured,
                                                                                      monkeypatch, short_t, route, why):
    """Untimed: batches (these hold 4) of windows up to SHORT_T tokens (these are 16) take eager, longer ones the
    kernel route."""
    monkeypatch.setattr(calibration, "MIN_BATCHES", 5)
    monkeypatch.setattr(calibration, "SHORT_T", short_t)
    ref = _scan(lm, route="fused" if route == "eager" else "eager")
    got = _scan(lm)  # one chunk of 4 batches (14 windows, 4 a batch)
    assert measured == [] and not costs.exists()
    assert [(c["route"], c["why"]) for c in got.settings["route_by_shape"].values()] == [
        (route, f"not timed: 4 batch(es) of this shape, timing repays itself from 5; {why}")]
    for name, m in ref.means.items():
        np.testing.assert_allclose(got.means[name], m, atol=1e-5, rtol=0, equal_nan=True, err_msg=name)


def test_an_untimed_batch_of_one_short_window_takes_the_eager_route(lm, costs, measured, monkeypatch):
    monkeypatch.setattr(calibration, "MIN_BATCHES", 10**6)
    got = scan(lm, TEXTS[:3], max_samples=None, batch_size=1, max_length=16, progress=False)
    assert {c["route"] for c in got.settings["route_by_shape"].values()} == {"eager"} and measured == []


def test_shapes_share_a_power_of_two_bucket():
    assert [bucket(t) for t in (1, 2, 3, 100, 128, 129, 8192)] == [1, 2, 4, 128, 128, 256, 8192]
