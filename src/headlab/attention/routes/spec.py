"""The rules of one attention call, as the fused and chunked routes need them: no (T, T) mask, only rules.

Eager attention adds a ``(B, 1, T, T)`` mask to its logits. The kernel routes instead carry what that mask
is made of — causality, padded keys, a sliding window — and build only the small piece a block of queries
needs. A key j is visible to query i when

    key_mask[j]  and  (not causal or j <= i)  and  (window is None or i - j < window)

(Hugging Face's ``sliding_window_overlay``: ``kv_idx > q_idx - sliding_window``), or when j == i: a padded
query always keeps itself, so no row is empty and no NaN can reach real positions through the values.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from headlab.errors import HeadlabError


@dataclass(frozen=True)
class AttentionSpec:
    causal: bool
    key_mask: torch.Tensor | None  # (B, T) bool, False on padding; None: every key is real
    scale: float
    window: int | None = None      # causal sliding window (keys i - window < j <= i)
    softcap: float | None = None   # logits -> softcap * tanh(logits / softcap) before masking

    def __post_init__(self) -> None:
        if self.window is not None and not self.causal:
            raise HeadlabError("bidirectional sliding-window attention is not supported by the fused or chunked "
                               "routes; use --route eager")

    @property
    def right_padded(self) -> bool:
        """True when no real key follows a padded one (headlab's own batches are always right-padded)."""
        if self.key_mask is None:
            return True
        km = self.key_mask
        return bool((km[:, 1:] <= km[:, :-1]).all())

    def visible(self, q0: int, q1: int, k0: int, k1: int, device: torch.device | None = None) -> torch.Tensor:
        """(B or 1, q1 - q0, k1 - k0) bool: which keys k0..k1-1 the queries q0..q1-1 may see, on ``device`` (the
        scores'; without padding there is no key mask to take it from)."""
        dev = device if device is not None else self.key_mask.device if self.key_mask is not None else None
        i = torch.arange(q0, q1, device=dev)[:, None]
        j = torch.arange(k0, k1, device=dev)[None, :]
        ok = torch.ones(q1 - q0, k1 - k0, dtype=torch.bool, device=dev)
        if self.causal:
            ok &= j <= i
        if self.window is not None:
            ok &= (i - j) < self.window
        ok = ok[None]
        if self.key_mask is not None:
            ok = ok & self.key_mask[:, None, k0:k1]
        return ok | (i == j)[None]

    def visible_pairs(self, i: torch.Tensor, j: torch.Tensor, key_real: torch.Tensor | None) -> torch.Tensor:
        """Elementwise visibility of pairs (query positions ``i``, key positions ``j``, broadcastable)."""
        ok = torch.ones(torch.broadcast_shapes(i.shape, j.shape), dtype=torch.bool, device=i.device)
        if self.causal:
            ok = ok & (j <= i)
        if self.window is not None:
            ok = ok & ((i - j) < self.window)
        if key_real is not None:
            ok = ok & key_real
        return ok | (i == j)

    def cap(self, logits: torch.Tensor) -> torch.Tensor:
        if self.softcap is None:
            return logits
        return torch.tanh(logits / self.softcap) * self.softcap
