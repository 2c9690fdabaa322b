"""The Triton census route against a naive computation, in Triton's interpreter on the CPU: the output and every
per-query sum, under causal, padding and sliding-window masks, with grouped K/V, in fp32 and fp16."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("TRITON_INTERPRET", "1")  # read when triton is first imported (conftest sets it too)
pytest.importorskip("triton")

from headlab.attention.routes.triton_census import census_attention  # noqa: E402

from .tiny import TEST_DEVICE  # noqa: E402

SHIFTS = (0, 1)


def naive(q, k, v, *, scale, causal, valid, window, keys, band, ids, softcap=None):
    """Every quantity from the whole (T, T) probabilities, in float64, by loops where a loop is clearest."""
    B, H, T, D = q.shape
    g = H // k.shape[1]
    kk, vv = k.double().repeat_interleave(g, 1), v.double().repeat_interleave(g, 1)
    s = torch.einsum("bhid,bhjd->bhij", q.double(), kk) * scale
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    keep = valid[:, None, None, :].expand(B, H, T, T).clone()
    if causal:
        keep &= j <= i
    if window is not None:
        keep &= i - j < window
    keep |= (i == j)  # a query always sees itself, padded or not
    s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    out = p @ vv
    ks = torch.einsum("bhij,bjm->bhim", p, keys.double())
    bd = torch.zeros(B, H, T, band + 1, dtype=torch.float64)
    for d in range(band + 1):
        for t in range(d, T):
            bd[:, :, t, d] = p[:, :, t, t - d]
    mt = torch.zeros(B, H, T, len(SHIFTS), dtype=torch.float64)
    for b in range(B):
        for t in range(T):
            for c, sh in enumerate(SHIFTS):
                for src in range(t):
                    if valid[b, src] and ids[b, src] == ids[b, t] and src + sh < T:
                        mt[b, :, t, c] += p[b, :, t, src + sh]
    plogp = torch.where(p > 0, p * p.clamp_min(1e-300).log(), 0.0).sum(-1)
    return out, ks, bd, mt, plogp


CASES = {  # name: (B, H, H_kv, T, D, causal, padded, window, softcap)
    "causal": (2, 2, 2, 37, 16, True, False, None, None),
    "causal gqa padded": (2, 4, 2, 50, 8, True, True, None, None),
    "window gqa": (1, 4, 1, 45, 16, True, False, 7, None),
    "encoder padded": (2, 2, 2, 33, 16, False, True, None, None),
    "softcap padded": (2, 2, 1, 30, 16, True, True, None, 2.0),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("case", list(CASES))
def test_one_pass_equals_the_naive_sums(case, dtype):
    B, H, Hkv, T, D, causal, padded, window, softcap = CASES[case]
    g = torch.Generator().manual_seed(hash(case) % 1000)
    q, k, v = (torch.randn(B, h, T, D, generator=g) * 1.5 for h in (H, Hkv, Hkv))
    q, k, v = (x.to(dtype) for x in (q, k, v))
    valid = torch.ones(B, T, dtype=torch.bool)
    if padded:
        valid[0, T - 9:] = False  # right padding of the first sample
    ids = torch.randint(0, 6, (B, T), generator=g)  # few tokens: many matches
    keys = torch.stack([(ids == 3), torch.arange(T)[None].expand(B, T) == 0], -1).float()  # a token, the sink
    dev = [x.to(TEST_DEVICE) for x in (q, k, v, valid, keys, ids)]  # compiled on a GPU, interpreted on the CPU
    out, sums = census_attention(*dev[:3], scale=D ** -0.5, causal=causal, valid=dev[3], window=window, keys=dev[4],
                                 band=4, ids=dev[5], shifts=SHIFTS, softcap=softcap, block=16)  # several tiles a row
    out, sums = out.cpu(), type(sums)(*(None if t is None else t.cpu() for t in vars(sums).values()))
    ref = naive(q.float(), k.float(), v.float(), scale=D ** -0.5, causal=causal, valid=valid, window=window,
                keys=keys, band=4, ids=ids, softcap=softcap)
    tol = 1e-5 if dtype == torch.float32 else 3e-3
    for got, want in zip((out.float(), sums.keyset, sums.band, sums.match, sums.plogp[..., None]),
                         (ref[0], ref[1], ref[2], ref[3], ref[4][..., None])):
        assert got.shape == want.shape
        diff = (got.double() - want).abs().max().item()
        assert diff <= tol * max(1.0, want.abs().max().item()), diff
    assert out.dtype == dtype and sums.band.shape[-1] == 5


def test_shapes_that_cannot_be_grouped_are_refused():
    q, k = torch.zeros(1, 3, 8, 16), torch.zeros(1, 2, 8, 16)
    with pytest.raises(ValueError, match="H a multiple of H_kv"):
        census_attention(q, k, k, scale=1.0)
