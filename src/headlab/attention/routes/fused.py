"""The ``fused`` route: the layer's output from a fused attention kernel that also returns the log-sum-exp.

``attend`` computes what eager attention computes — ``softmax(scale · q kᵀ + mask) v`` — without a (T, T)
tensor, plus, per query, ``LSE_i`` and the mass on each declared key set:

* key sets ride along as extra value columns: V' = [V, 1[j ∈ set₁], ...], whose outputs are Σ_j p_ij·1[j ∈ set].
  The CPU kernel wants Q, K and V of one head width, so Q and K get zero columns (they add nothing to a logit;
  the original ``scale`` is passed explicitly).
* one kernel call for the common cases (causal with right padding: ``is_causal`` and no mask at all;
  bidirectional: a (B, 1, 1, T) key-padding bias); query blocks with a small (C, K) bias otherwise (sliding
  windows: K = C + window, so local layers cost O(T · window); left padding).

CPU: ``aten._scaled_dot_product_flash_attention_for_cpu`` → (output, logsumexp). CUDA:
``aten._scaled_dot_product_efficient_attention`` with ``compute_log_sumexp=True`` (it takes the bias; the
log-sum-exp rows may be padded to a multiple of 32 and are cut back).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from headlab.attention.routes.spec import AttentionSpec


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, spec: AttentionSpec,
           indicators: torch.Tensor | None, block_mb: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """q (B, H, T, d), k (B, Hkv, T, d), v (B, Hkv, T, dv), indicators (B, T, m) or None →
    (output (B, H, T, dv), lse (B, H, T) float32, key-set mass (B, H, T, m) or None)."""
    B, H, T, d = q.shape
    dv = v.shape[-1]
    m = 0 if indicators is None else indicators.shape[-1]
    width = max(d, dv + m)
    if m:
        ind = indicators.to(v.dtype)[:, None].expand(B, v.shape[1], T, m)
        v = torch.cat([v, ind], -1)
    q, k, v = (x if x.shape[-1] == width else F.pad(x, (0, width - x.shape[-1])) for x in (q, k, v))
    if spec.window is None and (not spec.causal or spec.right_padded):
        bias = None
        if not spec.causal and spec.key_mask is not None and not bool(spec.key_mask.all()):
            bias = _bias(spec.key_mask[:, None, None, :], q.dtype)  # (B, 1, 1, T)
        out, lse = _kernel(q, k, v, spec.causal, bias, spec.scale)
    else:
        out, lse = _blocks(q, k, v, spec, block_mb)
    mass = out[..., dv:dv + m] if m else None
    return out[..., :dv], lse.float(), mass


def _blocks(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, spec: AttentionSpec, block_mb: float
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Query blocks of C rows, each against just the keys it may see, with a (B, 1, C, K) bias."""
    B, H, T, _ = q.shape
    reach = spec.window if spec.window is not None else T
    per_row = B * H * min(T, reach + 1) * 4  # the kernel's logits tile and the bias, per query row
    C = max(16, min(T, int(block_mb * 2**20 // per_row)))
    outs, lses = [], []
    for a in range(0, T, C):
        b = min(T, a + C)
        k0 = max(0, a - reach + 1) if spec.causal and spec.window is not None else 0
        k1 = b if spec.causal else T
        bias = _bias(spec.visible(a, b, k0, k1, q.device)[:, None], q.dtype)  # (B or 1, 1, C, K)
        o, l = _kernel(q[:, :, a:b], k[:, :, k0:k1], v[:, :, k0:k1], False, bias, spec.scale)
        outs.append(o)
        lses.append(l)
    return torch.cat(outs, 2), torch.cat(lses, 2)


def _bias(visible: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return torch.zeros(visible.shape, dtype=dtype, device=visible.device).masked_fill(~visible, float("-inf"))


def _kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, bias: torch.Tensor | None,
            scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    if q.device.type == "cpu":
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, attn_mask=bias,
                                                                          scale=scale)
    if k.shape[1] != q.shape[1]:  # the CUDA kernel takes equal head counts
        k = k.repeat_interleave(q.shape[1] // k.shape[1], 1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], 1)
    d = q.shape[-1]
    # the kernel reads rows in 16-byte vectors: a head width that is not a multiple of 8 is padded with zeros,
    # which change no q·k (the scale is given), and the output's padded columns are dropped
    if d % 8:
        q, k, v = (F.pad(t, (0, -d % 8)) for t in (q, k, v))
    if bias is not None:
        bias = _aligned(bias.to(q.device), q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    out, lse = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, bias, True, 0.0, causal,
                                                                      scale=scale)[:2]
    return out[..., :d], lse[..., : q.shape[2]]


def _aligned(bias: torch.Tensor, B: int, H: int, M: int, K: int) -> torch.Tensor:
    """``bias`` (B or 1, 1, M, K) expanded to (B, H, M, K) with its rows 16-element aligned, as the kernel needs
    (what torch's own scaled_dot_product_attention does before it calls the same kernel)."""
    rows = bias.new_full((*bias.shape[:-1], -(-K // 16) * 16), float("-inf"))
    rows[..., :K] = bias
    return rows[..., :K].expand(B, H, M, K)
