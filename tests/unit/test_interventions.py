"""The intervention primitive: each intervention against an independent computation (a hand-written hook or
weight surgery on a copy), hooks removed on exit, and the q/k sites written back in every layout."""

import copy
from functools import reduce

import pytest
import torch

from headlab.attention.adapters import head_dims
from headlab.attention.interventions import Gate, Patch, Record, Zero, intervene

from .tiny import FAMILIES, tiny_family


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randint(3, 64, (2, 9), generator=g), torch.randint(3, 64, (2, 9), generator=g)


def _logits(lm, ids):
    return lm.model(input_ids=ids).logits


def test_record_sees_what_an_independent_pre_hook_sees_and_everything_is_removed() -> None:
    lm = tiny_family("llama")
    a, _ = _inputs()
    mine, theirs = {}, {}
    o_proj = lm.model.model.layers[1].self_attn.o_proj
    handle = o_proj.register_forward_pre_hook(lambda _m, args: theirs.__setitem__(1, args[0].clone()))
    with torch.no_grad(), intervene(lm.model, {1: [Record(lambda x: mine.__setitem__(1, x))]}):
        _logits(lm, a)
    handle.remove()
    H, _, d = head_dims(lm.model)
    torch.testing.assert_close(mine[1], theirs[1].view(2, 9, H, d), rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="boom"):
        with intervene(lm.model, {0: [Zero([1])]}, site="q"), intervene(lm.model, {1: [Zero([0])]}):
            raise RuntimeError("boom")
    assert not any(m._forward_pre_hooks or m._forward_hooks for m in lm.model.modules())


def test_patch_from_the_same_input_changes_nothing_and_from_another_input_changes_the_output() -> None:
    lm = tiny_family("llama")
    a, b = _inputs()
    rec: dict[int, torch.Tensor] = {}
    with torch.no_grad():
        with intervene(lm.model, {0: [Record(lambda x: rec.__setitem__(0, x))]}):
            plain_a = _logits(lm, a)
        za = rec[0]
        with intervene(lm.model, {0: [Record(lambda x: rec.__setitem__(0, x))]}):
            plain_b = _logits(lm, b)
        with intervene(lm.model, {0: [Patch([0, 2], rec[0])]}):
            torch.testing.assert_close(_logits(lm, b), plain_b, rtol=0, atol=0)
        with intervene(lm.model, {0: [Patch([0, 2], za)]}):
            patched = _logits(lm, b)
        with intervene(lm.model, {0: [Patch([0, 2], torch.zeros_like(za))]}):
            zero_by_patch = _logits(lm, b)
        with intervene(lm.model, {0: [Zero([0, 2])]}):
            zeroed = _logits(lm, b)
    assert (patched - plain_b).abs().max() > 1e-4 and not torch.equal(plain_a, plain_b)
    torch.testing.assert_close(zero_by_patch, zeroed, rtol=0, atol=0)


def test_a_stacked_gate_equals_one_zero_ablation_per_copy() -> None:
    lm = tiny_family("gpt2")
    a, _ = _inputs()
    H = head_dims(lm.model)[0]
    gates = torch.ones(H, H) - torch.eye(H)  # copy i has head i gated off
    with torch.no_grad():
        with intervene(lm.model, {1: [Gate(gates)]}):
            stacked = _logits(lm, a.repeat(H, 1)).view(H, *a.shape, -1)
        for h in range(H):
            with intervene(lm.model, {1: [Zero([h])]}):
                torch.testing.assert_close(stacked[h], _logits(lm, a), rtol=1e-5, atol=1e-5)


# family -> (path of the projection whose weight rows hold head h's queries, rows of head h) for weight surgery
Q_ROWS = {
    "llama": ("layers.{l}.self_attn.q_proj", lambda h, d, H: slice(h * d, (h + 1) * d)),
    "qwen3": ("layers.{l}.self_attn.q_proj", lambda h, d, H: slice(h * d, (h + 1) * d)),   # q_norm, (B, T, H, d)
    "gemma3": ("layers.{l}.self_attn.q_proj", lambda h, d, H: slice(h * d, (h + 1) * d)),  # q_norm, (B, H, T, d)
    "phi3": ("layers.{l}.self_attn.qkv_proj", lambda h, d, H: slice(h * d, (h + 1) * d)),  # fused [q | k | v]
    "gpt_neox": ("layers.{l}.attention.query_key_value", lambda h, d, H: slice(3 * h * d, 3 * h * d + d)),
}


@pytest.mark.parametrize("family", sorted(Q_ROWS))
def test_zeroing_a_query_head_at_the_q_site_equals_zeroing_its_projection_rows(family: str) -> None:
    lm = tiny_family(family)
    a, _ = _inputs()
    H, _, d = head_dims(lm.model)
    path, rows = Q_ROWS[family]
    surgery = copy.deepcopy(lm)
    with torch.no_grad():
        proj = reduce(getattr, path.format(l=1).split("."), surgery.model.base_model)
        proj.weight[rows(2, d, H)] = 0.0
        if getattr(proj, "bias", None) is not None:
            proj.bias[rows(2, d, H)] = 0.0
        plain = _logits(lm, a)
        with intervene(lm.model, {1: [Zero([2])]}, site="q"):
            hooked = _logits(lm, a)
        expected = _logits(surgery, a)
    assert (hooked - plain).abs().max() > 1e-5
    torch.testing.assert_close(hooked, expected, rtol=1e-5, atol=1e-5)
    assert FAMILIES[family][2]  # decoders: the logits path above is theirs
