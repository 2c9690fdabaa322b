"""headlab.nn: the from-scratch Transformer agrees with itself across kernels and plugs into the analyses."""

import numpy as np
import pytest
import torch

from headlab.attention.hooks import capture, route
from headlab.nn import ModelConfig, Transformer, as_loaded


def _model(kind="decoder", positions="rope", seed=0):
    torch.manual_seed(seed)
    return Transformer(ModelConfig(kind=kind, vocab_size=50, n_layers=2, n_heads=4, d_model=32,
                                   max_length=24, positions=positions)).eval()


@pytest.mark.parametrize("kind", ["decoder", "encoder"])
@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope"])
def test_fused_and_captured_paths_agree_and_probs_are_distributions(kind, positions):
    m = _model(kind, positions)
    ids = torch.randint(3, 50, (3, 12), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0  # right padding
    with torch.no_grad():
        fused = m(ids, mask).logits
        seen = {}
        with capture(m, lambda layer, p: seen.__setitem__(layer, p.clone())):
            explicit = m(ids, mask).logits
    assert route(m) == "native" and sorted(seen) == [0, 1]
    torch.testing.assert_close(explicit, fused, atol=1e-5, rtol=1e-5)
    p = seen[0]  # (B, H, T, T)
    torch.testing.assert_close(p.sum(-1), torch.ones(3, 4, 12))
    assert float(p[1, :, :9, 9:].abs().max()) == 0.0  # real queries never see padding
    if kind == "decoder":
        assert float(p[0].triu(1).abs().max()) == 0.0  # causal
    assert all(a.probs_hook is None for a in (b.attn for b in m.layers))  # capture removed


def test_decoder_is_causal_in_its_outputs():
    m = _model()
    ids = torch.randint(3, 50, (1, 10), generator=torch.Generator().manual_seed(2))
    ids2 = ids.clone()
    ids2[0, 7] = (ids2[0, 7] + 1) % 50
    with torch.no_grad():
        a, b = m(ids).logits, m(ids2).logits
    torch.testing.assert_close(a[:, :7], b[:, :7])
    assert (a[:, 7:] - b[:, 7:]).abs().max() > 0


def test_trained_model_goes_through_the_detectors_and_the_ablation_sweep():
    from headlab.ablation.heads import ablated
    from headlab.ablation.importance import primary_metric
    from headlab.ablation.sweep import exact_sweep, naive_sweep
    from headlab.detectors import Batch

    lm = as_loaded(_model(), tokenizer=None, name="tiny-headlab")
    assert lm.facts.causal and lm.facts.n_layers == 2 and lm.facts.position_encoding == "rope"
    ids = torch.randint(3, 50, (2, 10), generator=torch.Generator().manual_seed(3))
    b = Batch(ids, torch.ones_like(ids, dtype=torch.bool), True)
    with torch.inference_mode():
        with ablated(lm.model, 2, 4, {}):
            torch.testing.assert_close(lm.model(ids).logits, lm.model(ids).logits)
        naive = naive_sweep(lm, [b], None, primary_metric, progress=False)
        fast = exact_sweep(lm, [b], None, primary_metric, progress=False)
    np.testing.assert_allclose(fast, naive, rtol=1e-5)
    assert np.ptp(naive) > 0


def test_window_and_config_errors():
    m = _model()
    with pytest.raises(ValueError, match="longer than the model's window"):
        m(torch.zeros(1, 25, dtype=torch.long))
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(d_model=30, n_heads=4)
