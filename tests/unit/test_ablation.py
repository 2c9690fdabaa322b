"""Proofs for head ablation at the output projection's input, on tiny Llama (GQA), BERT and MPNet."""

import numpy as np
import pytest
import torch

from headlab.ablation import ablated, output_projections, parse_heads, record_head_inputs
from headlab.errors import HeadlabError

from .tiny import tiny


def _run(lm, ids, **kw):
    with torch.inference_mode():
        return lm.model(input_ids=ids, **kw).last_hidden_state


def _ids(seed=0):
    return torch.randint(3, 64, (2, 9), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind", ["llama", "bert", "mpnet"])
def test_ablating_nothing_is_bit_identical(kind):
    lm = tiny(kind)
    f = lm.facts
    ids = _ids()
    plain = _run(lm, ids)
    with ablated(lm.model, f.n_layers, f.n_heads, {0: [], 1: []}):
        same = _run(lm, ids)
    assert torch.equal(plain, same)


@pytest.mark.parametrize("kind", ["llama", "bert", "mpnet"])
@pytest.mark.parametrize("layer,head", [(0, 1), (1, 3)])
def test_zero_ablation_removes_exactly_the_heads_term(kind, layer, head):
    """Projection output under ablation == plain output minus z_h @ W_O[:, h] (bias and other heads kept)."""
    lm = tiny(kind)
    f = lm.facts
    proj = output_projections(lm.model, f.n_layers)[layer]
    d = proj.weight.shape[1] // f.n_heads
    outs = []
    hook = proj.register_forward_hook(lambda m, a, o: outs.append(o.detach().clone()))
    rec = {}
    try:
        with record_head_inputs(lm.model, f.n_layers, f.n_heads, rec):
            _run(lm, _ids())
        with ablated(lm.model, f.n_layers, f.n_heads, {layer: [head]}):
            _run(lm, _ids())
    finally:
        hook.remove()
    plain, knocked = outs
    z_h = rec[layer][:, :, head]  # (B, T, d)
    with torch.no_grad():
        term = z_h.clone() @ proj.weight[:, head * d:(head + 1) * d].T
    torch.testing.assert_close(knocked, plain - term, atol=1e-5, rtol=0)
    assert (plain - knocked).abs().max() > 1e-4  # the head did contribute


def test_wrong_place_ablation_differs_from_the_right_one():
    lm = tiny("llama")
    f = lm.facts
    ids = _ids()
    proj = output_projections(lm.model, f.n_layers)[1]
    d = proj.weight.shape[0] // f.n_heads
    with ablated(lm.model, f.n_layers, f.n_heads, {1: [2]}):
        right = _run(lm, ids)

    def zero_output_slice(m, a, o):  # the common bug: zero part of o_proj's *output*
        o = o.clone()
        o[..., 2 * d:3 * d] = 0
        return o

    h = proj.register_forward_hook(zero_output_slice)
    try:
        wrong = _run(lm, ids)
    finally:
        h.remove()
    assert (right - wrong).abs().max() > 1e-4


def test_mean_and_resample_modes_write_the_given_values():
    lm = tiny("llama")
    f = lm.facts
    src, dst = {}, {}
    with record_head_inputs(lm.model, f.n_layers, f.n_heads, src):
        _run(lm, _ids(1))
    mean = {l: v.mean((0, 1)) for l, v in src.items()}  # (H, d)
    seen = {}
    with ablated(lm.model, f.n_layers, f.n_heads, {0: [1]}, mode="mean", values=mean), \
            record_head_inputs(lm.model, f.n_layers, f.n_heads, seen):
        _run(lm, _ids(2))
    # record hooks run after the ablation pre-hook (registered later), so they see the replaced input
    torch.testing.assert_close(seen[0][:, :, 1], mean[0][1].expand_as(seen[0][:, :, 1]))
    with ablated(lm.model, f.n_layers, f.n_heads, {2: [0, 3]}, mode="resample", values=src), \
            record_head_inputs(lm.model, f.n_layers, f.n_heads, dst):
        _run(lm, _ids(2))
    torch.testing.assert_close(dst[2][:, :, [0, 3]], src[2][:, :, [0, 3]])
    assert not torch.equal(dst[2][:, :, 1], src[2][:, :, 1])


def test_hooks_are_removed_after_an_exception_and_errors_are_clear():
    lm = tiny("bert")
    f = lm.facts
    with pytest.raises(RuntimeError):
        with ablated(lm.model, f.n_layers, f.n_heads, {0: [0]}):
            raise RuntimeError("boom")
    assert not any(m._forward_pre_hooks for m in lm.model.modules())
    with pytest.raises(HeadlabError, match="needs replacement"):
        with ablated(lm.model, f.n_layers, f.n_heads, {0: [0]}, mode="mean"):
            pass
    assert parse_heads("1.2, 0.3,1.0", 2, 4) == {1: [2, 0], 0: [3]}
    with pytest.raises(HeadlabError, match="outside"):
        parse_heads("5.0", 2, 4)
    with pytest.raises(HeadlabError, match="L.H"):
        parse_heads("x", 2, 4)


def test_matched_control_keeps_layer_counts_and_avoids_targets():
    import random

    from headlab.ablation.experiment import matched_control

    target = {0: [1, 2], 3: [0]}
    for seed in range(5):
        c = matched_control(target, 4, random.Random(seed))
        assert {l: len(h) for l, h in c.items()} == {0: 2, 3: 1}
        assert not set(c[0]) & {1, 2} and 0 not in c[3]
    with pytest.raises(HeadlabError, match="matched control"):
        matched_control({0: [0, 1, 2]}, 4, random.Random(0))


def test_slash_token_masks():
    from headlab.ablation.metrics import symbol_mask, token_sets
    from headlab.detectors import Batch

    def _masks(b, ids, causal, k):
        return token_sets(b, symbol_mask(b, ids), causal, k, stimuli=False)

    ids = torch.tensor([[5, 7, 6, 6, 6, 6], [5, 6, 6, 0, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], dtype=torch.bool)
    b = Batch(ids, mask, causal=True)
    slash, plain = _masks(b, frozenset({7}), causal=True, k=2)
    assert slash[0].tolist() == [False, False, True, True, False, False]  # the 2 targets after the '/'
    assert not slash[1].any() and plain[1].tolist() == [True, True, True, False, False, False]
    assert not plain[0].any()
    enc_slash, _ = _masks(Batch(ids, mask, causal=False), frozenset({7}), causal=False, k=2)
    assert enc_slash[0].tolist() == [False, True, False, False, False, False]


def test_each_way_of_scoring_positions_is_one_row_the_settings_offer():
    """--positions offers exactly the registry's rows; each masks a batch and names what it scored."""
    from dataclasses import fields

    from headlab.ablation.experiment import ABLATE, AblateSettings
    from headlab.ablation.positions import POSITIONS
    from headlab.detectors import Batch

    offered = next(f for f in fields(AblateSettings) if f.name == "positions").metadata["choices"]
    assert offered == tuple(POSITIONS) and ABLATE.positions in POSITIONS
    ids = torch.tensor([[5, 7, 6, 6]])
    b = Batch(ids, torch.ones_like(ids, dtype=torch.bool), causal=True)
    b.cache["marked"] = torch.tensor([[0, 0, 1, 1]])
    for name, way in POSITIONS.items():
        scored, rest = way.masks(b, frozenset({7}), True, 1, False)
        assert scored.shape == rest.shape == (1, 4) and not (scored & rest).any(), name
        assert way.words(ABLATE, True, "slash") and way.words(ABLATE, False, "slash"), name
    assert POSITIONS["repeat"].masks(b, frozenset(), True, 1, True)[0].tolist() == [[False, False, True, True]]


@pytest.mark.parametrize("bad", [0.10, 1, 3.5, None, ["0.1"]])
def test_a_head_given_as_a_number_is_refused_not_read_as_another_head(bad):
    """0.10 (layer 0, head 10) written as a float is 0.1: a head must be the string 'L.H'."""
    from headlab.ablation.heads import parse_heads
    from headlab.errors import HeadlabError
    from headlab.head import Head

    with pytest.raises(HeadlabError, match="write heads as strings|not of the form"):
        parse_heads([bad], 2, 12)
    assert parse_heads(["0.10", Head(1, 2), " "], 2, 12) == {0: [10], 1: [2]}


def _forward(lm, ids):
    out = lm.model(input_ids=ids, **({"use_cache": False} if lm.facts.causal else {}))
    return out.logits if lm.facts.causal else out.last_hidden_state


@pytest.mark.parametrize("family", sorted(__import__("tests.unit.tiny", fromlist=["FAMILIES"]).FAMILIES))
def test_blocks_below_the_ablated_ones_reused_give_the_full_forward_exactly(family):
    """shared_blocks records what the block below the lowest ablated head returned on the first pass and
    returns it from every lower block after: each family's output equals the full forward's with the same
    ablation, and differs from the plain forward (so the reused pass did ablate)."""
    from headlab.ablation.heads import shared_blocks
    from headlab.attention.adapters import parts

    from .tiny import tiny_family

    lm = tiny_family(family)
    f = lm.facts
    first = f.n_layers - 1
    ids = torch.randint(5, 60, (2, 9), generator=torch.Generator().manual_seed(1))
    cache = [None]
    with torch.inference_mode():
        with shared_blocks(lm.model, f.n_layers, first, cache, 0):
            plain = _forward(lm, ids)  # records
        with ablated(lm.model, f.n_layers, f.n_heads, {first: [1]}):
            full = _forward(lm, ids)
        calls = []
        handle = parts(lm.model, f.n_layers).attention[0].register_forward_hook(lambda *_: calls.append(1))
        with shared_blocks(lm.model, f.n_layers, first, cache, 0), \
                ablated(lm.model, f.n_layers, f.n_heads, {first: [1]}):
            reused = _forward(lm, ids)
        assert not calls  # block 0's attention did not run
        again = _forward(lm, ids)  # the blocks are themselves again afterwards
        handle.remove()
    assert calls and cache[0] is not None
    assert torch.equal(reused, full) and not torch.equal(reused, plain)
    assert torch.equal(again, plain)


def _condition(v):
    from headlab.ablation.experiment import Condition

    return Condition(near={"p": [np.full(4, v)]}, away={"p": [np.full(4, v)]})


def test_the_sequential_p_stops_at_h_sets_that_reach_the_target_and_the_two_sided_p_reads_both_tails():
    from headlab.ablation.experiment import _control, _reached
    from headlab.ablation.result import p_said

    res = {"base": _condition(0.0), "target": _condition(1.0)}
    res.update({f"control{i}": _condition(v) for i, v in enumerate([0.5, 1.5, 0.2, 2.0])})
    assert _reached(res, "p", True) == 2
    seq = _control(res, "near", "p", 2, True, np.random.default_rng(0))
    assert seq["draws"] == 4 and seq["p_value"] == 2 / 4 and seq["sequential"] == {"stop_after": 2, "stopped": True}
    assert "sequential p = 0.500" in p_said(seq) and "2 of 4 control sets" in p_said(seq)
    fixed = _control(res, "near", "p", None, True, np.random.default_rng(0))
    assert fixed["p_value"] == 3 / 5 and fixed["sequential"] is None and "0.200 at best" in p_said(fixed)
    helped = {"base": _condition(0.0), "target": _condition(1.0)}  # every random set costs more than the target
    helped.update({f"control{i}": _condition(v) for i, v in enumerate([2.0, 3.0, 4.0, 5.0])})
    h = _control(helped, "near", "p", None, True, np.random.default_rng(0))
    assert h["p_value"] == 1.0 and h["p_two_sided"] == 2 * (1 / 5)  # one-sided says nothing, two-sided sees it
    assert "two-sided p = 0.400" in p_said(h)


def test_per_token_loss_and_accuracy_equal_a_naive_loop_over_tokens():
    """token_metrics takes the loss over rows of the vocabulary; each value equals -log softmax at the next token,
    computed one token at a time, and accuracy the argmax hit; padding and the first position are NaN."""
    from types import SimpleNamespace

    from headlab.ablation.metrics import token_metrics

    from .test_importance import tiny_lm

    lm = tiny_lm()
    ids = torch.randint(0, 64, (2, 7), generator=torch.Generator().manual_seed(3))
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[1, 5:] = False  # right padding
    batch = SimpleNamespace(input_ids=ids, attention_mask=mask)
    with torch.inference_mode():
        loss, acc = token_metrics(lm, batch, None)
        logits = lm.model(input_ids=ids, attention_mask=mask.long(), use_cache=False).logits
    for b in range(2):
        for t in range(1, 7):
            if not mask[b, t]:
                assert np.isnan(loss[b, t]) and np.isnan(acc[b, t])
                continue
            row = logits[b, t - 1].double()
            want = float(torch.logsumexp(row, 0) - row[ids[b, t]])
            assert abs(loss[b, t] - want) < 1e-5 and acc[b, t] == float(int(row.argmax()) == int(ids[b, t]))
    assert np.isnan(loss[:, 0]).all()
