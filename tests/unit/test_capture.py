import pytest
import torch

from headlab.attention.hooks import capture, route
from headlab.errors import HeadlabError

from .tiny import TEST_DEVICE, tiny


def _inputs(n_layers_vocab: int = 64):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, n_layers_vocab, (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0  # padded sample
    mask[2, 4:] = 0
    return ids.to(TEST_DEVICE), mask.to(TEST_DEVICE)


@pytest.mark.parametrize("kind,expected_route", [("llama", "interface"), ("bert", "interface"),
                                                  ("mpnet", "dropout-hook")])
def test_capture_matches_output_attentions(kind, expected_route):
    lm = tiny(kind)
    ids, mask = _inputs()
    assert route(lm.model) == expected_route
    seen = {}
    with torch.inference_mode():
        ref = lm.model(input_ids=ids, attention_mask=mask, output_attentions=True).attentions
        with capture(lm.model, lambda layer, p: seen.__setitem__(layer, p.clone())) as session:
            lm.model(input_ids=ids, attention_mask=mask)
    assert session.calls == lm.facts.n_layers == len(ref)
    for layer, r in enumerate(ref):
        assert seen[layer].shape == r.shape == (3, lm.facts.n_heads, 11, 11)
        torch.testing.assert_close(seen[layer], r, atol=1e-6, rtol=0)


def test_capture_holds_one_layer_at_a_time_and_drops_weights():
    lm = tiny("llama")
    ids, mask = _inputs()
    layers = []
    with torch.inference_mode(), capture(lm.model, lambda layer, p: layers.append(layer)):
        out = lm.model(input_ids=ids, attention_mask=mask)
    assert layers == [0, 1, 2]
    assert getattr(out, "attentions", None) is None  # the model itself returned no attention tensors


@pytest.mark.parametrize("kind", ["llama", "bert", "mpnet"])
def test_everything_is_removed_even_when_the_callback_raises(kind):
    lm = tiny(kind)
    ids, mask = _inputs()
    impl = lm.model.config._attn_implementation
    n_hooks = sum(len(m._forward_hooks) for m in lm.model.modules())

    def boom(layer, p):
        raise RuntimeError("reducer failed")

    with pytest.raises(RuntimeError, match="reducer failed"):
        with torch.inference_mode(), capture(lm.model, boom):
            lm.model(input_ids=ids, attention_mask=mask)
    assert lm.model.config._attn_implementation == impl
    assert sum(len(m._forward_hooks) for m in lm.model.modules()) == n_hooks
    # and the model runs normally afterwards, without calling the old callback
    with torch.inference_mode():
        out = lm.model(input_ids=ids, attention_mask=mask, output_attentions=True)
    assert len(out.attentions) == lm.facts.n_layers


def test_unsupported_module_is_a_clear_error():
    with pytest.raises(HeadlabError, match="no headlab adapter for model family"):
        route(torch.nn.Sequential(torch.nn.Linear(2, 2)))
