"""Initialization schemes: the default gives the weights a seed always gave; each scheme changes what it says."""

import math

import pytest
import torch
from torch import nn

from headlab.errors import HeadlabError
from headlab.nn import ModelConfig, Transformer
from headlab.training import from_dict


def _model(init: str, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(ModelConfig(vocab_size=50, n_layers=3, n_heads=4, d_model=64, init=init))


def _sd(w: torch.Tensor) -> float:
    return float(w.detach().std())


def test_default_init_gives_the_weights_earlier_runs_got(monkeypatch):
    def old(m: nn.Module) -> None:  # the init every earlier run used, as it was written in the model file
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    new = _model("default")
    monkeypatch.setattr("headlab.nn.transformer.apply_init", lambda model: model.apply(old))
    before = _model("default")
    for (n, a), (_, b) in zip(new.state_dict().items(), before.state_dict().items()):
        assert torch.equal(a, b), n


def test_each_scheme_changes_what_it_says():
    base, small, scaled = _model("default"), _model("small-qk"), _model("gpt2-scaled")
    for L in range(3):
        a, s, g = base.layers[L].attn, small.layers[L].attn, scaled.layers[L].attn
        assert _sd(s.q_proj.weight) == pytest.approx(0.002, rel=0.1)
        assert _sd(s.k_proj.weight) == pytest.approx(0.002, rel=0.1)
        assert torch.equal(s.v_proj.weight, a.v_proj.weight)  # untouched
        assert _sd(g.o_proj.weight) == pytest.approx(0.02 / math.sqrt(6), rel=0.1)
        assert _sd(scaled.layers[L].mlp[2].weight) == pytest.approx(0.02 / math.sqrt(6), rel=0.1)
        assert torch.equal(g.q_proj.weight, a.q_proj.weight)


def test_fan_in_init_scales_every_linear_by_its_width_and_keeps_the_embeddings():
    base, wide = _model("default"), _model("fan-in")
    for block in wide.layers:
        for lin in (block.attn.q_proj, block.attn.k_proj, block.attn.v_proj, block.attn.o_proj, block.mlp[0]):
            assert _sd(lin.weight) == pytest.approx(lin.in_features ** -0.5, rel=0.1)
        assert _sd(block.mlp[2].weight) == pytest.approx(block.mlp[2].in_features ** -0.5, rel=0.1)
    assert torch.equal(wide.embed.weight, base.embed.weight)  # tied to the output head: left at N(0, 0.02^2)


def test_mimetic_init_makes_queries_attend_to_themselves():
    m = _model("mimetic")
    for block in m.layers:
        M = (block.attn.q_proj.weight.T @ block.attn.k_proj.weight).detach()  # = alpha Z + beta I
        assert float(M.diagonal().mean()) == pytest.approx(0.7, abs=0.1)
        off = M - torch.diag(M.diagonal())
        assert float(off.std()) == pytest.approx(0.7 / math.sqrt(64), rel=0.15)

    def self_mass(model: Transformer) -> float:
        sinks = []
        for block in model.layers:
            block.attn.logits_sink = sinks
        model.eval()
        with torch.no_grad():
            model(torch.randint(0, 50, (4, 16)))
        tril = torch.ones(16, 16).tril().bool()  # the logits are kept before the causal mask: mask them here
        probs = torch.stack([s.masked_fill(~tril, float("-inf")).softmax(-1) for s in sinks])  # (L, B, H, T, T)
        return float(probs.diagonal(dim1=-2, dim2=-1)[..., 1:].mean())

    assert self_mass(_model("mimetic")) > 2 * self_mass(_model("default"))


def test_unknown_init_is_a_config_error():
    with pytest.raises(HeadlabError, match="init must be one of default, small-qk, gpt2-scaled, fan-in, mimetic"):
        from_dict({"model": {"init": "xavier"}})
