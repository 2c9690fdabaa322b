"""The route-cost cache is a cache: a damaged entry is dropped, said, re-measured and rewritten, never trusted
(no string, NaN or negative seconds reach a scan's record) and never fatal."""

from __future__ import annotations

import json
import math

import pytest

from headlab.census.calibration import RoutePicker
from headlab.detectors import make
from headlab.notices import recorded

from .tiny import tiny


def _picker(tmp_path):
    loaded = tiny("llama")
    return RoutePicker(loaded, [make("previous-token")], ("fused", "eager"), block_mb=64.0,
                       path=tmp_path / "route-costs.json")


@pytest.mark.parametrize("damage", [
    {"fused": "fast", "eager": 0.1}, {"fused": float("nan"), "eager": 0.1}, {"fused": -1.0, "eager": 0.1},
    {"fused": True, "eager": 0.1}, ["fused", 0.1], "x", None,
])
def test_a_damaged_cost_is_measured_again(tmp_path, damage):
    p = _picker(tmp_path)
    p.path.write_text(json.dumps({p._model_key(): {"2x16": damage}}, allow_nan=True))
    timed: list[str] = []
    with recorded() as said:
        route = p.pick(2, 16, make=lambda: None, run=lambda r, b: timed.append(r), n_batches=100)
    assert route in ("fused", "eager") and timed  # measured now, not read
    assert p.report()["2x16"]["why"] == "measured now"
    assert all(isinstance(s, float) and math.isfinite(s) and s >= 0 for s in p.report()["2x16"]["seconds"].values())
    if damage is not None:
        assert any("damaged" in m for m in said)
    stored = json.loads(p.path.read_text())[p._model_key()]["2x16"]
    assert set(stored) == {"fused", "eager"} and all(isinstance(v, float) for v in stored.values())


def test_a_model_entry_that_is_not_a_table_is_replaced(tmp_path):
    p = _picker(tmp_path)
    p.path.write_text(json.dumps({p._model_key(): ["not", "a", "table"]}))
    with recorded():
        p.pick(2, 16, make=lambda: None, run=lambda r, b: None, n_batches=100)
    assert isinstance(json.loads(p.path.read_text())[p._model_key()], dict)


def test_a_sound_entry_is_read_not_measured(tmp_path):
    p = _picker(tmp_path)
    p.path.write_text(json.dumps({p._model_key(): {"2x16": {"fused": 0.5, "eager": 0.2}}}))
    assert p.pick(2, 16, make=lambda: None, run=lambda r, b: pytest.fail("timed"), n_batches=100) == "eager"
