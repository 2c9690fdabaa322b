"""Gradient gates (Michel et al.) on a tiny causal LM: the gate gradient equals a finite difference."""

import numpy as np
import torch

from headlab.ablation.importance import _gates, spearman
from headlab.detectors import Batch
from headlab.models.loaded import LoadedModel, read_facts


def tiny_lm():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    m = LlamaForCausalLM(cfg)
    m.set_attn_implementation("eager")
    m.eval()
    return LoadedModel("tiny-lm", m, None, read_facts(m), "random init")


def _loss(lm, ids, gates):
    with _gates(lm.model, 2, 4, gates):
        logits = lm.model(input_ids=ids, use_cache=False).logits[:, :-1]
    return torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:])


def test_gate_gradient_matches_finite_difference_and_gates_of_one_change_nothing():
    lm = tiny_lm()
    ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        plain = torch.nn.functional.cross_entropy(lm.model(input_ids=ids).logits[:, :-1].transpose(1, 2), ids[:, 1:])
        assert torch.allclose(_loss(lm, ids, torch.ones(2, 4)), plain, atol=1e-6)
    gates = torch.ones(2, 4, dtype=torch.float64, requires_grad=True)
    lm.model.double()
    (grad,) = torch.autograd.grad(_loss(lm, ids.clone(), gates), gates)
    eps = 1e-2  # central difference; eager softmax runs in float32 even for a float64 model
    for layer, head in [(0, 1), (1, 3)]:
        up, down = torch.ones(2, 4, dtype=torch.float64), torch.ones(2, 4, dtype=torch.float64)
        up[layer, head] += eps
        down[layer, head] -= eps
        with torch.no_grad():
            fd = (_loss(lm, ids, up) - _loss(lm, ids, down)) / (2 * eps)
        assert abs(fd.item() - grad[layer, head].item()) < 0.02 * abs(grad[layer, head].item()) + 1e-5
    assert not any(m._forward_pre_hooks for m in lm.model.modules())


def test_gradient_importance_is_layer_normalised():
    from headlab.ablation.importance import gradient_importance

    lm = tiny_lm()
    ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(2))
    b = Batch(ids, torch.ones_like(ids, dtype=torch.bool), True)
    imp = gradient_importance(lm, [b])
    np.testing.assert_allclose(np.linalg.norm(imp, axis=1), 1.0, atol=1e-6)
    assert all(p.requires_grad for p in lm.model.parameters())  # restored


def test_spearman():
    a = np.array([1.0, 2, 3, 4])
    assert spearman(a, a * 10) == 1.0 and spearman(a, -a) == -1.0


def _padded_batches(vocab, lengths, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for lens in lengths:
        T = max(lens)
        ids = torch.randint(1, vocab, (len(lens), T), generator=g)
        mask = torch.zeros(len(lens), T, dtype=torch.bool)
        for i, n in enumerate(lens):
            mask[i, :n] = True
        out.append(Batch(ids, mask, True))
    return out


import pytest  # noqa: E402


@pytest.mark.parametrize("kind", ["lm", "bert", "mpnet"])
def test_exact_sweep_with_reuse_equals_naive_sweep(kind):
    """Replaying the plain layers below and stacking one layer's ablations gives the naive sweep's numbers."""
    from headlab.ablation.importance import pooled_metric, primary_metric
    from headlab.ablation.metrics import reference_hidden
    from headlab.ablation.sweep import exact_sweep, naive_sweep

    from .tiny import tiny

    lm = tiny_lm() if kind == "lm" else tiny(kind)
    batches = _padded_batches(64, [[10, 7, 9], [8, 8]], seed=3)
    for b in batches:
        b.causal = lm.facts.causal
    ref = reference_hidden(lm, batches)
    naive = naive_sweep(lm, batches, ref, primary_metric, progress=False)
    # group_tokens small enough to split a layer's heads into several stacked passes
    fast = exact_sweep(lm, batches, ref, primary_metric, group_tokens=60, progress=False)
    with torch.inference_mode():
        base = pooled_metric(lm, batches, ref) if lm.facts.causal else 0.0
    d_naive, d_fast = naive - base, fast - base
    scale = np.abs(d_naive).max()  # random encoders move hidden states by ~1e-6: compare relative to that
    assert scale > 0 and np.ptp(d_naive) > 0.1 * scale  # heads differ: not a comparison of constants
    np.testing.assert_allclose(d_fast, d_naive, rtol=1e-3, atol=1e-3 * scale)
    assert not any(m._forward_pre_hooks or m._forward_hooks for m in lm.model.modules())
    assert not any("forward" in m.__dict__ for m in lm.model.modules())


def test_the_summary_says_which_ranking_to_trust_where_they_disagree():
    from headlab.ablation.importance import AGREE, ranking_note

    assert "disagrees" in ranking_note(-0.02) and "trust the exact" in ranking_note(-0.02)
    assert "agrees" in ranking_note(AGREE) and "trust" not in ranking_note(0.95)


def test_per_sample_sweep_sums_to_the_pooled_one_and_intervals_cover_the_samples():
    """sample_sweep's rows are each sample's own sums (one sample alone gives its row); the interval of a head
    whose Δ is the same on every sample has no width; a naive bootstrap loop draws the same interval."""
    from headlab.ablation.importance import delta_intervals, primary_metric
    from headlab.ablation.sweep import sample_sweep

    lm = tiny_lm()
    batches = _padded_batches(64, [[10, 7, 9], [8, 8]], seed=3)
    sums, counts = sample_sweep(lm, batches, None, primary_metric, group_tokens=60, progress=False)
    assert sums.shape == (5, *counts.shape[1:]) and (counts[:, 0, 0] == [9, 6, 8, 7, 7]).all()  # predicted tokens
    alone = _padded_batches(64, [[8]], seed=3)  # not the same tokens: only the shapes and counts are compared
    one, n_one = sample_sweep(lm, alone, None, primary_metric, progress=False)
    assert one.shape == (1, *sums.shape[1:]) and (n_one == 7).all()
    rng = np.random.default_rng(0)
    base_s, base_c = rng.uniform(1, 2, 5) * 8, np.full(5, 8.0)
    flat = np.broadcast_to((base_s + 8 * 0.25)[:, None, None], (5, 2, 3)).copy()  # Δ = 0.25 on every sample
    iv = delta_intervals(flat, np.full((5, 2, 3), 8.0), base_s, base_c, seed=1, resamples=200)
    np.testing.assert_allclose(iv, 0.25, atol=1e-12)
    noisy = flat + rng.normal(0, 1, flat.shape)
    iv = delta_intervals(noisy, np.full((5, 2, 3), 8.0), base_s, base_c, seed=1, resamples=200)
    draw = np.random.default_rng(1).integers(0, 5, (200, 5))
    naive = [[np.percentile([noisy[d, l, h].sum() / 40 - base_s[d].sum() / 40 for d in draw], [2.5, 97.5])
              for h in range(3)] for l in range(2)]
    np.testing.assert_allclose(iv, naive, rtol=1e-10)
    assert (iv[..., 0] < iv[..., 1]).all()


def test_the_top_heads_the_gradient_ranks_far_lower_are_named():
    from headlab.ablation.importance import disagreements

    heads = [{"name": f"0.{i}", "exact_delta": 100 - i, "gradient": float(i)} for i in range(35)]
    named = disagreements(heads)  # exact order 0.0, 0.1, ...; the gradient's the reverse
    assert named[0] == "0.0 (exact #1, gradient #35)" and len(named) == 5  # 0.5 is the gradient's #30: not far
    assert disagreements([{**h, "gradient": -h["gradient"]} for h in heads]) == []
    assert disagreements([{**h, "gradient": None} for h in heads]) == []
