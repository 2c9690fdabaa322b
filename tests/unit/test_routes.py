"""Capture routes: fused and chunked scores equal the eager route's, on every architecture headlab serves, and
neither builds a (T, T) tensor."""

import functools

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import headlab.attention.routes as routes
import headlab.attention.routes.views as views
from headlab.attention.routes import choose
from headlab.census.engine import score_samples
from headlab.corpus import Sample
from headlab.detectors import make
from headlab.errors import HeadlabError
from headlab.nn import ModelConfig, Transformer, as_loaded

from .tiny import TEST_DEVICE, Slash, tiny

ALL = ["token", "offset", "previous-token", "duplicate-token", "induction", "sink", "marked", "entropy"]


def _samples(n=12, lo=3, hi=40, vocab=24, seed=0):
    """Random samples with repeated tokens (small vocabulary), some '/' (id 7) and marked targets."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        length = int(rng.integers(lo, hi))
        ids = rng.integers(8, 8 + vocab, size=length)
        if i % 3:
            ids[rng.integers(0, length, size=2)] = 7
        targets = (int(rng.integers(0, length)),) if i % 2 else ()
        out.append(Sample(i, f"s{i}", 0, tuple(int(x) for x in ids), targets=targets))
    return out


def _model(kind):
    if kind.startswith("nn-"):
        cfg = ModelConfig(kind=kind[3:], vocab_size=64, n_layers=2, n_heads=4, d_model=32, max_length=128)
        torch.manual_seed(0)
        lm = as_loaded(Transformer(cfg).to(TEST_DEVICE), None, kind)
    else:
        lm = tiny(kind)
    Slash(lm)
    return lm


def _scores(lm, route, names, batch_size, samples=None, block_mb=256.0):
    dets = [make(n) for n in names]
    chunks = list(score_samples(lm, dets, samples or _samples(), batch_size=batch_size, route=route,
                                block_mb=block_mb))
    return {n: np.concatenate([c[1][n] for c in chunks]) for n in names}


def _assert_same(got, ref, atol=1e-5):
    for n in got:
        assert got[n].shape == ref[n].shape
        np.testing.assert_allclose(got[n], ref[n], atol=atol, rtol=0, equal_nan=True, err_msg=n)
        assert not np.isnan(got[n]).all(), n


@pytest.mark.parametrize("kind", ["llama", "bert", "gemma3", "nn-decoder", "nn-encoder"])
@pytest.mark.parametrize("batch_size", [1, 8])
def test_fused_and_chunked_equal_eager(kind, batch_size):
    lm = _model(kind)
    ref = _scores(lm, "eager", ALL, batch_size)
    pairs = [n for n in ALL if n != "entropy"]
    _assert_same(_scores(lm, "fused", pairs, batch_size), {n: ref[n] for n in pairs})
    _assert_same(_scores(lm, "chunked", ALL, batch_size), ref)


@pytest.mark.parametrize("kind", ["llama", "bert", "gemma3", "nn-decoder"])
def test_the_eager_routes_one_product_equals_its_sum_by_sum_path(kind, monkeypatch):
    """Short windows read every declared sum (key sets, diagonals, token matches, links) from one dense pattern
    of pair weights; with no room for the pattern the same route reads them sum by sum (band, per-set products,
    token-group gathers: the path the detectors' naive-loop tests check). Both agree on every detector."""
    lm = _model(kind)
    names = ALL + ["linked"]
    samples = [Sample(s.index, s.doc_id, 0, s.input_ids, s.targets,
                      links=(("link", len(s.input_ids) - 1, 0, 1.0), ("link", len(s.input_ids) - 1, 1, 0.5)))
               for s in _samples(n=8, lo=4, hi=40, vocab=6)]
    dense = _scores(lm, "eager", names, 3, samples)  # the layers held and reduced together
    with monkeypatch.context() as m:
        m.setattr(routes.LayerScorer, "__init__", functools.partialmethod(routes.LayerScorer.__init__, defer_mb=0.0))
        _assert_same(dense, _scores(lm, "eager", names, 3, samples))  # one layer at a time
    monkeypatch.setattr(routes, "PATTERN_MB", 0.0)
    _assert_same(dense, _scores(lm, "eager", names, 3, samples))


def test_soft_capped_logits_take_the_chunked_route_and_agree():
    lm = _model("gemma2")
    assert choose(lm.model, [make("offset")]).candidates == ("chunked", "eager")
    with pytest.raises(HeadlabError, match="soft-caps"):
        choose(lm.model, [make("offset")], "fused")
    _assert_same(_scores(lm, "chunked", ALL, 4), _scores(lm, "eager", ALL, 4))


def test_every_code_path_of_the_kernel_routes(monkeypatch):
    """Tiny blocks (many row blocks, sliced match blocks), every token group through the kernel, every key set
    as an indicator column and then every one through the small-set product."""
    lm = _model("gemma3")  # sliding-window layers: the fused route's query blocks
    names = [n for n in ALL if n != "entropy"]
    samples = _samples(n=6, lo=60, hi=100, vocab=6)  # groups up to ~30 long
    ref = _scores(lm, "eager", ALL, 3, samples)
    _assert_same(_scores(lm, "chunked", ALL, 3, samples, block_mb=0.01), ref)
    monkeypatch.setattr(views.LogitsView, "KERNEL_GROUP", 2)
    monkeypatch.setattr(routes, "SMALL_SET", 10**6)  # every set is "big": indicator columns
    _assert_same(_scores(lm, "fused", names, 3, samples, block_mb=0.01), ref)
    monkeypatch.setattr(routes, "SMALL_SET", 0)  # every set is "small": logits against its keys only
    lm2 = _model("llama")
    _assert_same(_scores(lm2, "fused", names, 3, samples), _scores(lm2, "eager", names, 3, samples))


def test_left_padding_is_served_by_query_blocks():
    """Batches headlab builds are right-padded; a caller's left padding takes the fused route's block path."""
    from headlab.attention.routes import fused
    from headlab.attention.routes.spec import AttentionSpec

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 9, 8, generator=g) for _ in range(3))
    km = torch.ones(2, 9, dtype=torch.bool)
    km[1, :3] = False  # left padding
    spec = AttentionSpec(causal=True, key_mask=km, scale=0.3)
    assert not spec.right_padded
    out, lse, _ = fused.attend(q, k, v, spec, None, block_mb=0.001)
    logits = (q @ k.transpose(-1, -2)) * 0.3
    allowed = torch.ones(9, 9, dtype=torch.bool).tril()[None] & km[:, None, :] | torch.eye(9, dtype=torch.bool)
    logits = logits.masked_fill(~allowed[:, None], float("-inf"))
    torch.testing.assert_close(lse, torch.logsumexp(logits, -1), atol=1e-5, rtol=0)
    torch.testing.assert_close(out, logits.softmax(-1) @ v, atol=1e-5, rtol=0)


def test_entropy_matches_a_naive_loop_over_output_attentions():
    lm = _model("llama")
    samples = _samples(n=4)
    got = _scores(lm, "chunked", ["entropy"], 4, samples)["entropy"]
    for s in samples:
        ids = torch.tensor([s.input_ids], device=lm.model.device)
        with torch.inference_mode():
            att = lm.model(input_ids=ids, output_attentions=True).attentions
        for layer, a in enumerate(att):
            for h in range(a.shape[1]):
                rows = [-sum(float(p) * np.log(float(p)) for p in row if p > 0) for row in a[0, h]]
                assert got[s.index, layer, h] == pytest.approx(np.mean(rows), abs=1e-4)


@pytest.mark.parametrize("T, K", [(1, 0), (5, 0), (4, 3), (4, 4), (5, 8), (16, 3), (128, 8)])
def test_the_eager_band_equals_a_naive_loop_over_diagonals(T, K):
    probs = torch.rand(2, 3, T, T, generator=torch.Generator().manual_seed(T + K))
    want = torch.zeros(2, 3, T, K + 1)
    for i in range(T):
        for delta in range(min(i, K) + 1):
            want[:, :, i, delta] = probs[:, :, i, i - delta]
    for p in (probs, probs.transpose(2, 3).contiguous().transpose(2, 3)):  # in place, and copied when strided
        assert torch.equal(views.ProbsView(p).band(K), want)


def test_route_choice_and_errors():
    llama, mpnet = _model("llama"), _model("mpnet")
    c = choose(llama.model, [make("token"), make("induction")])
    assert c.route == "auto" and c.candidates == ("fused", "eager")
    c = choose(llama.model, [make("token"), make("entropy")])
    assert c.route == "auto" and c.candidates == ("chunked", "eager") and "entropy" in c.reason
    c = choose(mpnet.model, [make("offset")])
    assert c.route == "eager" and c.candidates == ("eager",) and "inline" in c.reason
    with pytest.raises(HeadlabError, match="whole rows"):
        choose(llama.model, [make("entropy")], "fused")
    with pytest.raises(HeadlabError, match="inline"):
        choose(mpnet.model, [make("offset")], "chunked")
    with pytest.raises(HeadlabError, match="unknown route"):
        choose(llama.model, [make("offset")], "flash")


class _Largest(TorchDispatchMode):
    """Records the largest tensor any aten op returns."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


@pytest.mark.parametrize("route,budget", [("fused", 0.5), ("chunked", 0.5)])
def test_no_tensor_of_size_t_by_t(route, budget):
    """At T = 1024, every tensor of a fused or chunked census stays far below T² elements; eager's does not."""
    T = 1024
    cfg = ModelConfig(kind="decoder", vocab_size=64, n_layers=2, n_heads=2, d_model=16, max_length=T)
    torch.manual_seed(0)
    lm = as_loaded(Transformer(cfg), None, "long")
    Slash(lm)
    rng = np.random.default_rng(0)
    sample = [Sample(0, "long", 0, tuple(int(x) for x in rng.integers(8, 64, size=T)))]  # (T, vocab) logits: small
    names = [n for n in ALL if route == "chunked" or n != "entropy"]
    sizes = {}
    for r in (route, "eager"):
        dets = [make(n) for n in names]
        for d in dets:
            d.bind(lm)
        with _Largest() as seen:
            list(score_samples(lm, dets, sample, batch_size=1, route=r, block_mb=budget))
        sizes[r] = seen.largest
    assert sizes["eager"] >= T * T  # the check can fail: eager materializes (B, H, T, T)
    assert sizes[route] < T * T // 4, sizes  # band tiles are (heads, T, 32 + 8); row blocks (heads, C, T)


PAIRS = ["token", "offset", "previous-token", "duplicate-token", "induction", "sink", "marked"]


@pytest.mark.parametrize("kind", ["llama", "bert", "nn-decoder"])
def test_every_route_in_bfloat16_is_within_2e_3_of_float32(kind):
    """A bf16 model's scores on every route (accumulated in float32) stay within 2e-3 of the float32 model's
    eager scores: measured 6e-4 (eager, which rounds the probabilities to bf16) and 3e-5 (chunked)."""
    lm = _model(kind)
    ref = _scores(lm, "eager", ALL, 4)
    lm.model.to(torch.bfloat16)
    for route, names in (("eager", ALL), ("chunked", ALL), ("fused", PAIRS)):
        got = _scores(lm, route, names, 4)
        for n in names:
            assert got[n].dtype == np.float32, (route, n)
        _assert_same(got, {n: ref[n] for n in names}, atol=2e-3)
