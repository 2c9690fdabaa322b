"""The auxiliary `/` loss of [induce]: its value against a naive loop, where it intervenes, its config errors."""

import pytest
import torch

from headlab.errors import HeadlabError
from headlab.nn import ModelConfig, Transformer
from headlab.training import from_dict
from headlab.training.config import InduceConfig
from headlab.training.induce import SlashAux

SLASH = frozenset({7, 9})


def _setup(kind: str):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(kind=kind, vocab_size=20, n_layers=2, n_heads=2, d_model=16, max_length=16))
    ids = torch.randint(10, 20, (3, 8))
    ids[0, 2], ids[0, 6], ids[1, 5], ids[1, 7] = 7, 9, 7, 7  # row 2 has no `/` at all
    mask = torch.ones(3, 8, dtype=torch.bool)
    mask[1, 6:] = False  # padding hides row 1's later slashes
    return model, ids, mask


@pytest.mark.parametrize("kind", ["decoder", "encoder"])
def test_aux_term_equals_a_naive_loop_over_queries(kind):
    model, ids, mask = _setup(kind)
    aux = SlashAux(InduceConfig(heads=["1.0", "0.1"], weight=3.0), SLASH, 2, 2, kind == "decoder")
    kept = aux.attach(model)
    model(ids, mask)
    got = aux.term(kept, ids, mask)
    aux.detach(model)
    sinks: list[torch.Tensor] = []  # the same probabilities, independently: logits, masked by hand, softmax
    for block in model.layers:
        block.attn.logits_sink = sinks
    with torch.no_grad():
        model(ids, mask)
    gaps = []
    for layer, head in ((1, 0), (0, 1)):
        for b in range(3):
            for i in range(8):
                if not mask[b, i]:
                    continue
                seen = [j for j in range(8) if mask[b, j] and (kind == "encoder" or j <= i)]
                p = sinks[layer][b, head, i, seen].softmax(-1)
                slash = [n for n, j in enumerate(seen) if int(ids[b, j]) in SLASH]
                if slash:
                    gaps.append(1 - float(p[slash].sum()))
    assert float(got.detach()) == pytest.approx(3.0 * sum(gaps) / len(gaps), rel=1e-5)


def test_aux_keeps_probabilities_only_of_the_chosen_layers_and_only_while_attached():
    model, ids, mask = _setup("decoder")
    aux = SlashAux(InduceConfig(heads=["1.1"], weight=1.0, start=5, stop=9), SLASH, 2, 2, True)
    assert [aux.active(s) for s in (4, 5, 8, 9)] == [False, True, True, False]
    kept = aux.attach(model)
    assert model.layers[0].attn.keep_probs is None and model.layers[1].attn.keep_probs is kept[1]
    fused = Transformer(model.cfg)
    fused.load_state_dict(model.state_dict())
    torch.testing.assert_close(model(ids, mask).logits, fused(ids, mask).logits, rtol=1e-5, atol=1e-5)
    assert kept[1][0].requires_grad and kept[1][0].shape == (3, 2, 8, 8)
    aux.detach(model)
    assert all(b.attn.keep_probs is None for b in model.layers)
    with pytest.raises(HeadlabError, match="outside the model"):
        SlashAux(InduceConfig(heads=["2.0"], weight=1.0), SLASH, 2, 2, True)


def test_induce_config_errors():
    with pytest.raises(HeadlabError, match="names no heads"):
        from_dict({"induce": {"weight": 1.0}})
    with pytest.raises(HeadlabError, match="outside the model"):
        from_dict({"model": {"n_layers": 2}, "induce": {"heads": ["5.0"], "weight": 1.0}})
    with pytest.raises(HeadlabError, match="must come after start"):
        from_dict({"induce": {"heads": ["0.0"], "weight": 1.0, "start": 50, "stop": 20}})
    with pytest.raises(HeadlabError, match="not of the form"):
        from_dict({"induce": {"heads": ["one"], "weight": 1.0}})
