"""The Triton route's evaluation of every detector equals the eager route's, on tiny models of five families
(GQA, an encoder with padding, sliding windows, soft-capped logits, headlab's own decoder), padded and not:
the census runs with each layer computed by one kernel pass (Triton's interpreter on the CPU), so later layers
also read the kernel's output."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # read when triton is first imported (conftest sets it too)
pytest.importorskip("triton")

import headlab.attention.routes as routes  # noqa: E402
from headlab.attention.routes.triton_route import blocked, handler  # noqa: E402
from headlab.detectors import make  # noqa: E402
from headlab.errors import HeadlabError  # noqa: E402

from .test_routes import ALL, _assert_same, _model, _samples, _scores  # noqa: E402


def _on_triton(self, route):
    """LayerScorer's kernel handler with every layer computed by the Triton pass (the route's own handler)."""
    return handler(self)


# batches of 8 pad every sample to the longest; llama once more unpadded, one sample a batch (the interpreter's
# cost is per launch, so the other families' unpadded case is left to tests/unit/test_triton_census.py's shapes)
@pytest.mark.parametrize("kind,batch_size", [("llama", 8), ("bert", 8), ("gemma3", 8), ("gemma2", 8),
                                             ("nn-decoder", 8), ("llama", 1)])
def test_every_detector_by_the_triton_pass_equals_eager(kind, batch_size, monkeypatch):
    lm = _model(kind)
    ref = _scores(lm, "eager", ALL, batch_size, samples=_samples(n=6))
    assert blocked(lm.model, [make(n) for n in ALL]) is None
    monkeypatch.setattr(routes.LayerScorer, "kernel", _on_triton)
    got = _scores(lm, "chunked", ALL, batch_size, samples=_samples(n=6))  # chunked's hooks, the triton pass
    _assert_same(got, ref)


def test_links_and_unreduced_rows_are_refused_in_one_line(monkeypatch):
    lm = _model("llama")

    class Rows:
        name, needs = "whole-rows", "rows"

    assert "whole-rows need whole rows" in blocked(lm.model, [make("entropy"), Rows()])
    monkeypatch.setattr(routes.LayerScorer, "kernel", _on_triton)
    with pytest.raises(HeadlabError, match="reads no explicit links.*--route"):
        _scores(lm, "chunked", ["linked"], 4, samples=_linked_samples())


def _linked_samples():
    from headlab.corpus import Sample

    return [Sample(i, f"s{i}", 0, tuple(range(8, 20)), links=(("ref", 5, 2, 1.0),)) for i in range(2)]
