"""Every architecture family headlab has an adapter for, on a tiny random model of it (no weights needed):

* capture equals ``output_attentions`` (the eager route), and the kernel routes' scores equal the eager ones;
* zero-ablating a head through headlab equals zeroing that head's input columns of W_O in a copy of the model
  (W_O located by the hand-written paths of ``tiny.FAMILIES``, not by the adapter);
* the exact single-head sweep equals the naive one;
* the pre-RoPE q/k site yields (B, T, heads, d) for both queries and keys.
"""

import copy
from functools import reduce

import numpy as np
import pytest
import torch

from headlab.ablation import ablated
from headlab.ablation.importance import primary_metric
from headlab.ablation.metrics import reference_hidden
from headlab.ablation.sweep import exact_sweep, naive_sweep
from headlab.attention.adapters import ADAPTERS, head_dims
from headlab.attention.hooks import capture
from headlab.attention.routes import choose
from headlab.census.engine import Batch, score_samples
from headlab.corpus import Sample
from headlab.detectors import make

from .tiny import FAMILIES, Slash, tiny_family

NAMES = sorted(FAMILIES)


def _batch(causal: bool, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 64, (3, 12), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    mask[2, 5:] = 0
    return ids, mask


def test_the_table_covers_at_least_twelve_families() -> None:
    families = {a.family for a in ADAPTERS} - {"headlab-nn"}
    assert len(families) >= 12
    tested = {tiny_family(n).adapter.family for n in NAMES}  # type: ignore[union-attr]
    assert len(tested) >= 12, tested


@pytest.mark.parametrize("family", NAMES)
def test_capture_equals_output_attentions_and_kernel_routes_equal_eager(family: str) -> None:
    lm = tiny_family(family)
    ids, mask = _batch(lm.facts.causal)
    seen: dict[int, torch.Tensor] = {}
    with torch.inference_mode():
        ref = lm.model(input_ids=ids, attention_mask=mask, output_attentions=True).attentions
        with capture(lm.model, lambda layer, p: seen.__setitem__(layer, p.clone())) as session:
            lm.model(input_ids=ids, attention_mask=mask)
    assert session.calls == lm.facts.n_layers == len(ref)
    for layer, r in enumerate(ref):
        torch.testing.assert_close(seen[layer], r, atol=1e-6, rtol=0)
    names = ["offset", "previous-token", "sink", "duplicate-token", "token"]
    kernel = choose(lm.model, [make(n) for n in names]).candidates[0]
    if kernel == "eager":
        return  # inline softmax or sink logits: only the eager route serves it
    Slash(lm)
    rng = np.random.default_rng(0)
    samples = [Sample(i, f"s{i}", 0, tuple(int(x) for x in rng.integers(8, 30, size=int(rng.integers(4, 30)))))
               for i in range(6)]

    def scores(r: str) -> dict[str, np.ndarray]:
        chunks = list(score_samples(lm, [make(n) for n in names], samples, batch_size=3, route=r))
        return {n: np.concatenate([c[1][n] for c in chunks]) for n in names}

    got, want = scores(kernel), scores("eager")
    for n in names:
        np.testing.assert_allclose(got[n], want[n], atol=1e-5, rtol=0, equal_nan=True, err_msg=f"{kernel} {n}")


def _w_o(lm, layer: int) -> torch.nn.Module:
    path = FAMILIES[lm.name.removeprefix("tiny-")][3].format(l=layer)
    return reduce(getattr, path.split("."), lm.model.base_model)


@pytest.mark.parametrize("family", NAMES)
def test_zero_ablation_equals_zeroed_w_o_columns(family: str) -> None:
    lm = tiny_family(family)
    ids, mask = _batch(lm.facts.causal)
    H, _, d = head_dims(lm.model)
    heads = {0: [1], 1: [0, 3]}
    surgery = copy.deepcopy(lm)
    conv1d = FAMILIES[family][4]
    with torch.no_grad():
        for layer, hs in heads.items():
            w = _w_o(surgery, layer).weight
            for h in hs:  # head h's slice of the projection input: columns (rows of a Conv1D weight)
                (w[h * d:(h + 1) * d] if conv1d else w[:, h * d:(h + 1) * d]).zero_()

    def out(m: torch.nn.Module) -> torch.Tensor:
        o = m(input_ids=ids, attention_mask=mask)
        return o.logits if lm.facts.causal else o.last_hidden_state

    with torch.inference_mode():
        plain = out(lm.model)
        with ablated(lm.model, lm.facts.n_layers, H, heads):
            hooked = out(lm.model)
        expected = out(surgery.model)
    assert (hooked - plain).abs().max() > 1e-4  # the ablation changes the output: not a vacuous comparison
    torch.testing.assert_close(hooked, expected, atol=1e-5, rtol=1e-5)
    assert not any(m._forward_pre_hooks for m in lm.model.modules())


@pytest.mark.parametrize("family", NAMES)
def test_exact_sweep_equals_naive_sweep(family: str) -> None:
    lm = tiny_family(family)
    g = torch.Generator().manual_seed(3)
    batches = []
    for lens in ([10, 7, 9], [8, 8]):
        ids = torch.randint(3, 64, (len(lens), max(lens)), generator=g)
        m = torch.zeros(len(lens), max(lens), dtype=torch.bool)
        for i, n in enumerate(lens):
            m[i, :n] = True
        batches.append(Batch(ids, m, lm.facts.causal))
    ref = reference_hidden(lm, batches)
    naive = naive_sweep(lm, batches, ref, primary_metric, progress=False)
    fast = exact_sweep(lm, batches, ref, primary_metric, group_tokens=60, progress=False)
    scale = np.abs(naive - naive.mean()).max()
    assert scale > 0
    np.testing.assert_allclose(fast, naive, rtol=1e-4, atol=1e-3 * scale)
    assert not any("forward" in m.__dict__ for m in lm.model.modules())


@pytest.mark.parametrize("family", NAMES)
def test_pre_rope_query_and_key_sites(family: str) -> None:
    from headlab.study.rope import capture_qk

    lm = tiny_family(family)
    ids, mask = _batch(lm.facts.causal)
    H, Hkv, d = head_dims(lm.model)
    got: dict[tuple[int, str], tuple[int, ...]] = {}
    with torch.inference_mode(), capture_qk(lm.model, d, lambda l, k, x: got.__setitem__((l, k), tuple(x.shape))):
        lm.model(input_ids=ids, attention_mask=mask)
    for layer in range(lm.facts.n_layers):
        assert got[(layer, "q")] == (3, 12, H, d) and got[(layer, "k")] == (3, 12, Hkv, d)


def test_the_architectures_page_lists_exactly_the_adapter_table() -> None:
    from pathlib import Path

    from headlab.attention.adapters import families_table

    readme = (Path(__file__).parents[2] / "docs" / "guide" / "architectures.md").read_text()
    listed = readme.split("<!-- families:start -->\n")[1].split("\n<!-- families:end -->")[0]
    assert listed == families_table(), "regenerate the README's table with `headlab models families`"


def test_a_family_without_an_adapter_is_named_in_one_line() -> None:
    from transformers import GPTJConfig, GPTJModel

    from headlab.attention.adapters import adapter_for
    from headlab.errors import HeadlabError

    model = GPTJModel(GPTJConfig(vocab_size=64, n_embd=32, n_layer=1, n_head=4, n_positions=64, rotary_dim=4))
    with pytest.raises(HeadlabError, match="no headlab adapter for model family 'gptj'"):
        adapter_for(model)
