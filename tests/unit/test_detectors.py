"""Detectors on hand-built attention patterns with known answers, and against TransformerLens's formulas."""

import math

import numpy as np
import pytest
import torch

from headlab.attention.routes import score_layer
from headlab.detectors import Batch, make, prepare_batch
from headlab.errors import HeadlabError


def run(det, attn, b):
    prepare_batch([det], b)
    return score_layer([det], attn, b)[det.name]


class FakeModel:
    """Just what Detector.bind reads."""

    def __init__(self, slash_ids=frozenset({7}), sep=2, cls=1):
        self.name = "fake"
        self._slash = slash_ids
        self.tokenizer = type("T", (), {"sep_token_id": sep, "cls_token_id": cls, "bos_token_id": None,
                                        "eos_token_id": None})()

    def ids_containing(self, char, bare=False):
        return self._slash if char == "/" else frozenset()


def batch(ids, lengths=None, causal=True):
    ids = torch.tensor(ids)
    B, T = ids.shape
    lengths = lengths or [T] * B
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    return Batch(ids, mask, causal)


def causal_uniform(B, H, T):
    a = torch.tril(torch.ones(T, T))
    return (a / a.sum(-1, keepdim=True)).expand(B, H, T, T).clone()


def test_token_mass_exact_on_one_hot_attention():
    # every query attends fully to position 2, which holds the target id 7
    ids = [[5, 6, 7, 8, 9]]
    attn = torch.zeros(1, 2, 5, 5)
    attn[:, 0, :, 2] = 1.0          # head 0: all on '/'
    attn[:, 1] = torch.eye(5)       # head 1: self only
    det = make("token")
    det.bind(FakeModel())
    s = run(det, attn, batch(ids, causal=False))
    assert s[0, 0] == pytest.approx(1.0)
    assert s[0, 1] == pytest.approx(1 / 5)  # only the query at the target itself


def test_token_causal_can_see_excludes_queries_before_the_first_target():
    ids = [[5, 6, 7, 8]]
    attn = causal_uniform(1, 1, 4)
    det = make("token")
    det.bind(FakeModel())
    # queries 2 and 3 can see the target: masses 1/3 and 1/4
    assert run(det, attn, batch(ids))[0, 0] == pytest.approx((1 / 3 + 1 / 4) / 2)
    all_q = make("token", queries="all")
    all_q.bind(FakeModel())
    assert run(all_q, attn, batch(ids))[0, 0] == pytest.approx((0 + 0 + 1 / 3 + 1 / 4) / 4)


def test_token_undefined_without_target_and_padding_ignored():
    ids = [[5, 6, 8, 9], [7, 5, 0, 0]]
    attn = causal_uniform(2, 1, 4)
    det = make("token")
    det.bind(FakeModel())
    s = run(det, attn, batch(ids, lengths=[4, 2]))
    assert math.isnan(s[0, 0])
    assert s[1, 0] == pytest.approx((1 + 1 / 2) / 2)  # pad queries 2, 3 not counted


def test_token_errors():
    with pytest.raises(HeadlabError):
        make("token", target="")
    det = make("token", target="§")
    with pytest.raises(HeadlabError, match="contains"):
        det.bind(FakeModel())
    with pytest.raises(HeadlabError, match="unknown detector"):
        make("slashiness")


@pytest.mark.parametrize("d", [2, 3])
def test_offset_recovers_a_planted_diagonal(d):
    T = 7
    attn = torch.zeros(1, 1, T, T)
    for i in range(T):
        attn[0, 0, i, max(i - d, 0)] = 1.0
    s = run(make("offset", max_offset=4), attn, batch([list(range(T))]))
    assert s.shape == (1, 1, 5)
    assert s[0, 0, d] == pytest.approx(1.0)     # every query i >= d hits i - d
    assert s[0, 0, 0] == pytest.approx(1 / 7)   # only row 0 attends to itself
    assert s[0, 0, 1] == pytest.approx(1 / 6)   # row 1 -> 0 (rows below d attend to position 0)
    assert s[0, 0, 4] == pytest.approx(0.0)


def test_offset_nan_when_sequence_too_short():
    attn = causal_uniform(1, 1, 3)
    s = run(make("offset", max_offset=4), attn, batch([[1, 2, 3]]))
    assert not torch.isnan(s[0, 0, 2]) and torch.isnan(s[0, 0, 3]) and torch.isnan(s[0, 0, 4])


# --- TransformerLens detect_head ("mul") reference, written from its published definition ----------------
def tl_patterns(tokens):
    T = len(tokens)
    prev = np.zeros((T, T))
    prev[1:, :-1] = np.eye(T - 1)
    eq = (np.equal.outer(tokens, tokens)).astype(float)
    np.fill_diagonal(eq, 0)
    dup = np.tril(eq)
    shifted = np.roll(dup, 1, axis=1)
    shifted[:, 0] = 0
    ind = np.tril(shifted)
    return {"previous-token": np.tril(prev), "duplicate-token": dup, "induction": ind}


def tl_score(a, p):
    return float((a * p).sum() / a.sum())


@pytest.mark.parametrize("name", ["previous-token", "duplicate-token", "induction"])
def test_pattern_detectors_match_transformerlens_and_ignore_padding(name):
    g = torch.Generator().manual_seed(0)
    T, H = 9, 3
    tokens = [[4, 5, 6, 4, 5, 6, 4, 9, 5], [3, 3, 8, 3, 8, 0, 0, 0, 0]]
    lengths = [9, 5]
    logits = torch.randn(2, H, T, T, generator=g)
    logits = logits.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    keymask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    logits = logits.masked_fill(~keymask[:, None, None, :], float("-inf"))
    attn = logits.softmax(-1)
    got = run(make(name), attn, batch(tokens, lengths))
    for b, n in enumerate(lengths):
        p = tl_patterns(np.array(tokens[b][:n]))[name]
        for h in range(H):
            a = attn[b, h, :n, :n].numpy()
            assert got[b, h].item() == pytest.approx(tl_score(a, p), abs=1e-6)


def test_sink_counts_position_zero_and_separators():
    ids = [[1, 5, 2, 6]]  # [CLS] x [SEP] y
    attn = torch.zeros(1, 2, 4, 4)
    attn[0, 0, :, 0] = 1.0  # all on [CLS]
    attn[0, 1, :, 2] = 0.5  # half on [SEP]
    attn[0, 1, :, 1] = 0.5
    det = make("sink")
    det.bind(FakeModel())
    s = run(det, attn, batch(ids, causal=False))
    assert s[0, 0] == pytest.approx(1.0) and s[0, 1] == pytest.approx(0.5)
