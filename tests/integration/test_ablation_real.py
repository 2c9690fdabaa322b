"""Ablation proofs on packaged real models (an encoder and a RoPE GQA decoder)."""

import pytest
import torch

from headlab.ablation import ablate, output_projections, record_head_inputs

from .conftest import SLASH_TEXTS, named

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name,layer,head", [("minilm-l6", 3, 5), ("smollm2-135m", 11, 6)])
def test_real_model_ablation_is_exact_and_leaves_no_hooks(name, layer, head):
    lm = named(name)
    f = lm.facts
    enc = lm.tokenizer(SLASH_TEXTS[:2], return_tensors="pt", padding=True)
    proj = output_projections(lm.model, f.n_layers)[layer]
    d = proj.weight.shape[1] // f.n_heads
    outs, rec = [], {}
    hook = proj.register_forward_hook(lambda m, a, o: outs.append(o.detach().clone()))
    try:
        with torch.inference_mode():
            with record_head_inputs(lm.model, f.n_layers, f.n_heads, rec):
                plain = lm.model(**enc).last_hidden_state
            with ablate(lm.model, f.n_layers, f.n_heads, {}):
                assert torch.equal(lm.model(**enc).last_hidden_state, plain)
            with ablate(lm.model, f.n_layers, f.n_heads, {layer: [head]}):
                ablated = lm.model(**enc).last_hidden_state
    finally:
        hook.remove()
    with torch.no_grad():
        term = rec[layer][:, :, head].clone() @ proj.weight[:, head * d:(head + 1) * d].T
    torch.testing.assert_close(outs[2], outs[0] - term, atol=1e-4, rtol=1e-5)
    assert (ablated - plain).abs().max() > 0
    assert not any(m._forward_pre_hooks for m in lm.model.modules())
