"""The ``chunked`` route: eager attention math, C query rows at a time, each block reduced and dropped.

For detectors that need whole probability rows (``rows`` detectors such as ``entropy``) and for layers the
fused kernel cannot express (logit soft-capping). Per block of C queries the route forms the ``(B, H, C, K)``
logits against the K keys the block may see, applies the layer's soft-cap and visibility rules, and computes
the softmax, the output, the per-query log-sum-exp (for the pair sums, read afterwards through
:class:`~headlab.attention.routes.views.LogitsView`), the key-set masses and every rows detector's partial sums.
Memory is O(B·H·C·T) for one block, with C chosen from a budget in MB; never O(T²).
"""

from __future__ import annotations

from typing import Callable

import torch

from headlab.attention.routes.spec import AttentionSpec

#: (probs (B, H, C, K) of queries q0..q0+C-1 over keys k0..k0+K-1) -> None; called once per block.
RowsCallback = Callable[[torch.Tensor, int, int], None]


def block_rows(B: int, H: int, T: int, block_mb: float) -> int:
    """Query rows per block so that the block's logits, probabilities and temporaries fit ``block_mb``."""
    per_row = 3 * B * H * T * 4
    return max(1, min(T, int(block_mb * 2**20 // per_row)))


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, spec: AttentionSpec, indicators: torch.Tensor | None,
           block_mb: float, on_rows: RowsCallback | None = None
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Same contract as :func:`headlab.attention.routes.fused.attend`, plus ``on_rows`` for rows detectors."""
    B, H, T, d = q.shape
    g = H // k.shape[1]
    C = block_rows(B, H, T, block_mb)
    out = q.new_empty(B, H, T, v.shape[-1])
    lse = torch.empty(B, H, T, dtype=torch.float32, device=q.device)
    mass = None if indicators is None else torch.empty(B, H, T, indicators.shape[-1], dtype=torch.float32,
                                                       device=q.device)
    for a in range(0, T, C):
        b = min(T, a + C)
        k0 = max(0, a - spec.window + 1) if spec.window is not None else 0
        k1 = b if spec.causal else T
        qb = q[:, :, a:b].reshape(B, H // g, g, b - a, d)  # grouped-query heads share a key head
        s = (qb @ k[:, :, None, k0:k1].transpose(-1, -2)).reshape(B, H, b - a, k1 - k0)  # (B, H, C, K)
        s = spec.cap(s.float() * spec.scale)
        s = s.masked_fill(~spec.visible(a, b, k0, k1, s.device)[:, None], float("-inf"))
        lse[:, :, a:b] = torch.logsumexp(s, -1)
        probs = torch.exp(s - lse[:, :, a:b, None])  # (B, H, C, K)
        del s
        pv = probs.to(v.dtype).reshape(B, H // g, g, b - a, k1 - k0) @ v[:, :, None, k0:k1]
        out[:, :, a:b] = pv.reshape(B, H, b - a, -1)
        if mass is not None:
            mass[:, :, a:b] = probs @ indicators[:, None, k0:k1].to(probs.dtype)  # type: ignore[index]
        if on_rows is not None:
            on_rows(probs, a, k0)
    return out, lse, mass
