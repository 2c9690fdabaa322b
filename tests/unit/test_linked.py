"""The ``linked`` detector (explicit (query, key) pairs a probe names) and the retrieval readings built on it,
against the model's own probabilities read by a naive loop, on every capture route."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from headlab.attention.routes import ROUTES
from headlab.census.engine import score_samples
from headlab.corpus import Sample
from headlab.detectors import make
from headlab.errors import HeadlabError
from headlab.nn import ModelConfig, Transformer, as_loaded
from headlab.retrieval.analysis import KEYS, READERS, _positions, head_profile
from headlab.retrieval.training import RetrievalTask, eval_set


def _model(vocab: int, max_length: int, kind: str = "decoder") -> Transformer:
    torch.manual_seed(0)
    return Transformer(ModelConfig(vocab_size=vocab, n_layers=2, n_heads=2, d_model=16, max_length=max_length,
                                   kind=kind, init="fan-in")).eval()


def _probs(model: Transformer, tokens: list[int]) -> np.ndarray:
    """(L, H, T, T) from each layer's own probabilities (keep_probs), not from a capture route."""
    for block in model.layers:
        block.attn.keep_probs = []
    try:
        with torch.no_grad():
            model(torch.tensor([tokens]))
        return np.stack([block.attn.keep_probs[0][0].numpy() for block in model.layers])
    finally:
        for block in model.layers:
            block.attn.keep_probs = None


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("kind", ["decoder", "encoder"])
def test_linked_mass_is_the_weighted_mean_of_the_named_pairs_on_every_route(route: str, kind: str) -> None:
    model = _model(50, 32, kind)
    rng = random.Random(1)
    samples = []
    for n in range(5):  # different lengths: padding inside a batch
        T = rng.randrange(6, 30)
        links = [("a", i, rng.randrange(0, i + 1), 1.0) for i in rng.sample(range(1, T), 3)]
        links += [("b", T - 1, j, 0.5) for j in (0, T // 2)] if n != 2 else []  # sample 2: no "b" link
        samples.append(Sample(n, "t", 0, tuple(rng.randrange(50) for _ in range(T)), links=tuple(links)))
    got = np.concatenate([s["linked"] for _, s in score_samples(
        as_loaded(model, None, "tiny"), [make("linked", labels=["a", "b"])], samples, batch_size=3, route=route)])
    for n, s in enumerate(samples):
        P = _probs(model, list(s.input_ids))
        for c, label in enumerate(("a", "b")):
            mine = [(i, j, w) for lab, i, j, w in s.links if lab == label]
            if not mine:
                assert np.isnan(got[n, ..., c]).all()
                continue
            want = sum(w * P[:, :, i, j] for i, j, w in mine) / sum(w for _, _, w in mine)
            np.testing.assert_allclose(got[n, ..., c], want, atol=2e-6)


def test_a_link_outside_its_sample_is_refused() -> None:
    model = _model(50, 32)
    bad = Sample(0, "t", 0, (1, 2, 3), links=(("a", 2, 7, 1.0),))
    with pytest.raises(HeadlabError, match=r"link 'a' \(2 → 7\) lies outside its 3 tokens"):
        list(score_samples(as_loaded(model, None, "tiny"), [make("linked", labels=["a"])], [bad], route="eager"))


def test_linked_needs_distinct_labels() -> None:
    with pytest.raises(HeadlabError, match="distinct"):
        make("linked", labels=["a", "a"])


def test_head_profile_equals_a_naive_loop_over_each_example() -> None:
    """The retrieval circuit's (layer, head, reader, key) masses from the engine against the per-example loop
    they replaced: each reader's key read from the layer's own probabilities."""
    task = RetrievalTask(3, "chain", n_distractors=1)
    model = _model(task.vocab.size, task.max_length)
    exs = eval_set(task, 6, 5, 3)
    want = np.zeros((2, 2, len(READERS), len(KEYS)))
    n = np.zeros((len(READERS), len(KEYS)))
    for ex in exs:
        seq, readers = _positions(task, ex)
        P = _probs(model, seq)
        for ri, r in enumerate(READERS):
            for pos, keys in readers[r]:
                for ki, k in enumerate(KEYS):
                    if k in keys and keys[k] >= 0:
                        want[:, :, ri, ki] += P[:, :, pos, keys[k]]
                        n[ri, ki] += 1
    for route in ROUTES:
        np.testing.assert_allclose(head_profile(model, task, exs, route=route), want / np.maximum(n, 1), atol=2e-6)
    assert n[READERS.index("query"), KEYS.index("def-var")] > 0  # the lookup the circuit is about was read


def test_hop_profile_agrees_on_every_route() -> None:
    from headlab.retrieval.hops import hop_profile

    task = RetrievalTask(3, "dense", n_distractors=2)
    model = _model(task.vocab.size, task.max_length)
    exs = eval_set(task, 8, 5, 3)
    eager = hop_profile(model, task, exs, route="eager")
    assert np.isfinite(eager[0][:, :, 1:, :]).any()
    for route in ROUTES:
        for got, want in zip(hop_profile(model, task, exs, route=route), eager):
            np.testing.assert_allclose(got, want, atol=2e-6)
