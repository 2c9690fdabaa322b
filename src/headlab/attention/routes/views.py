"""Two ways to read single attention probabilities: from a materialized matrix, or from logits and the LSE.

:class:`ProbsView` indexes the eager route's ``(B, H, T, T)`` probabilities. :class:`LogitsView` never has them:
it recomputes the logit ``s_ij = scale · q_i · k_j`` of just the pairs asked for and returns
``p_ij = exp(s_ij − LSE_i)``, with ``LSE_i`` the log-sum-exp the fused kernel (or the chunked route) produced
for query i, and zero where the layer's rules hide key j from query i. Both satisfy
:class:`headlab.detectors.needs.LayerView`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from headlab.attention.routes.fused import _kernel
from headlab.attention.routes.spec import AttentionSpec


class ProbsView:
    """Probabilities ``(B, H, T, T)`` of one layer (the eager route and the reference)."""

    def __init__(self, probs: torch.Tensor):
        self.probs = probs

    def keyset_mass(self, keys: torch.Tensor) -> torch.Tensor:
        return self.probs @ keys.to(self.probs.dtype)[:, None]  # (B, H, T, T) @ (B, 1, T, m) -> (B, H, T, m)

    def band(self, K: int) -> torch.Tensor:
        # Strided views instead of K + 1 diagonal copies: element (i, e) is p[i, i + e - K], so column e holds
        # delta = K - e (zero where i < delta). Rows from K on are read in place (i·(T+1) - K + e); only the first K
        # rows are left-padded, where a copy of the whole padded matrix cost twice the time.
        B, H, T, _ = self.probs.shape
        if not 0 < K < T:
            padded = F.pad(self.probs, (K, 0)).contiguous()  # (B, H, T, T + K)
            return padded.as_strided((B, H, T, K + 1), (H * T * (T + K), T * (T + K), T + K + 1, 1)).flip(-1)
        probs = self.probs.contiguous()
        top = F.pad(probs[..., :K, :K], (K, 0))  # (B, H, K, 2K)
        head = top.as_strided((B, H, K, K + 1), (H * K * 2 * K, K * 2 * K, 2 * K + 1, 1))
        rest = probs.as_strided((B, H, T - K, K + 1), (H * T * T, T * T, T + 1, 1), probs.storage_offset() + K * T)
        return torch.cat([head, rest], 2).flip(-1)  # (B, H, T, K + 1)

    def pattern_sums(self, pattern: torch.Tensor) -> torch.Tensor:
        """pattern (B, T·T, S) → (B, H, S): Σ_ij p[b, h, i, j] · pattern[b, i·T + j, s], one batched product."""
        B, H, T, _ = self.probs.shape
        return self.probs.reshape(B, H, T * T).float() @ pattern

    def blocks(self, rows: torch.Tensor, cols: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        T = self.probs.shape[-1]
        b = (rows[:, 0] // T)[:, None, None]
        got = self.probs[b, :, (rows % T)[:, :, None], (cols % T)[:, None, :]]  # (G, r, c, H)
        return got.permute(0, 3, 1, 2) * keep[:, None]


class LogitsView:
    """Probabilities recomputed pair by pair from queries, keys and the per-query log-sum-exp.

    q: (B, H, T, d); k: (B, Hkv, T, d) (grouped-query heads share a key head: head h reads key head
    h // (H / Hkv)); lse: (B, H, T) natural-log sum of exp(capped, masked logits) per query.
    """

    def __init__(self, q: torch.Tensor, k: torch.Tensor, lse: torch.Tensor, spec: AttentionSpec):
        self.q, self.k, self.lse, self.spec = q, k, lse.float(), spec
        self.B, self.H, self.T, self.d = q.shape
        self.groups = self.H // k.shape[1]
        self._flat: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    def _logits_to_probs(self, s: torch.Tensor, lse: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        s = self.spec.cap(s.float() * self.spec.scale)
        return torch.exp(s - lse) * visible

    def band(self, K: int, tile: int = 32) -> torch.Tensor:
        B, H, T, d = self.q.shape
        Hkv, P = self.k.shape[1], tile
        # Tiles of P queries against the P + K keys they can reach on the band: one small matrix product per
        # tile (2-3x faster on CPU than a product per query), O(T · (P + K)) memory, never (T, T).
        n, g = -(-T // P), self.groups
        q = self.q if n * P == T else F.pad(self.q, (0, 0, 0, n * P - T))
        q = q.reshape(B, Hkv, g, n, P, d).transpose(2, 3).reshape(B, Hkv, n, g * P, d)  # a group's heads as rows
        windows = F.pad(self.k, (0, 0, K, n * P - T)).unfold(2, P + K, P)  # (B, Hkv, n, d, P+K): keys tP-K..
        tiles = torch.matmul(q, windows)  # (B, Hkv, n, g·P, P+K)
        col = (torch.arange(P)[:, None] + K - torch.arange(K + 1)[None, :]).repeat(g, 1)  # row, delta -> key column
        s = tiles.gather(-1, col.to(tiles.device).expand(*tiles.shape[:-1], K + 1))  # (B, Hkv, n, g·P, K+1)
        s = (
            s.reshape(B, Hkv, n, g, P, K + 1).transpose(2, 3).reshape(B, H, n * P, K + 1)[:, :, :T]
        )  # col delta: key i-delta
        i = torch.arange(T, device=s.device)[:, None]
        j = i - torch.arange(K + 1, device=s.device)[None, :]  # (T, K+1)
        key_real = j >= 0
        if self.spec.key_mask is not None:
            key_real = key_real & self.spec.key_mask[:, j.clamp_min(0)]  # (B, T, K+1)
            key_real = key_real[:, None]
        return self._logits_to_probs(s, self.lse[..., None], self.spec.visible_pairs(i, j, key_real) & (j >= 0))

    def _flat_views(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q as (B·T, H, d), k as (B·T, Hkv, d), lse as (B·T, H): rows addressed by flat position b·T + t.
        Made contiguous once: the many small row gathers of :meth:`blocks` run ~2x faster on it."""
        if self._flat is None:
            B, H, T, d = self.q.shape
            self._flat = (
                self.q.transpose(1, 2).reshape(B * T, H, d).contiguous(),
                self.k.transpose(1, 2).reshape(B * T, -1, d).contiguous(),
                self.lse.transpose(1, 2).reshape(B * T, H),
            )
        return self._flat

    def blocks(self, rows: torch.Tensor, cols: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        fq, fk, flse = self._flat_views()
        G, r = rows.shape
        c = cols.shape[1]
        Hkv = fk.shape[1]
        qi = fq[rows].reshape(G, r, Hkv, self.groups, self.d).permute(0, 2, 3, 1, 4)  # (G, Hkv, g, r, d)
        kj = fk[cols].permute(0, 2, 3, 1)  # (G, Hkv, d, c)
        s = (qi.reshape(G, Hkv, -1, self.d) @ kj).reshape(G, self.H, r, c)  # one batched product per block
        i, j = (rows % self.T)[:, :, None], (cols % self.T)[:, None, :]
        key_real = None if self.spec.key_mask is None else self.spec.key_mask.reshape(-1)[cols][:, None, :]
        ok = keep & self.spec.visible_pairs(i, j, key_real)  # (G, r, c)
        s = self.spec.cap(s.float() * self.spec.scale).masked_fill_(~ok[:, None], float("-inf"))
        return torch.exp(s - flse[rows].transpose(1, 2)[..., None])  # lse: (G, H, r, 1)

    @property
    def fuses_matches(self) -> bool:
        """True when :meth:`match_mass` is exact: no window or soft-cap that the kernel would not apply."""
        return self.spec.window is None and self.spec.softcap is None

    #: groups at least this long go through the kernel; shorter ones are cheaper as explicit blocks (measured
    #: on 2 CPU cores, T = 2048, 45 stacked heads: c = 32: 8.9 ms kernel vs 7.7 ms blocks; c = 64: 4.6 vs 10.2).
    KERNEL_GROUP = 64

    def match_mass(self, pos: torch.Tensor, shifts: list[int]) -> torch.Tensor:
        """pos (G, c) a bucket of :class:`~headlab.detectors.needs.Groups` → (S, G, H, c − 1): the mass of the
        query at slot a (a = 1..c−1) on the keys at the group's earlier slots b < a, shifted by each shift.

        Each group's positions form a short sequence; the fused kernel runs on it with a causal mask that is
        shifted by one (queries at slots 1.., keys at slots ..c−2), so it sums exactly the pairs b < a and
        returns their log-sum-exp L. The mass is exp(L − LSE) with the layer's LSE of that query: no (c, c) block
        is ever formed. Padded slots (after a group's last real one) only feed padded queries.
        """

        fq, fk, flse = self._flat_views()
        n = fq.shape[0]
        S = len(shifts)
        q = fq[pos[:, 1:]].transpose(1, 2)  # (G, H, c-1, d)
        k = torch.cat([fk[(pos[:, :-1] + s).clamp_max(n - 1)] for s in shifts]).transpose(1, 2)  # (S·G, Hkv, c-1, d)
        _, lse = _kernel(q.repeat(S, 1, 1, 1), k, k, True, None, self.spec.scale)  # (S·G, H, c-1)
        own = flse[pos[:, 1:]].transpose(1, 2).repeat(S, 1, 1)  # the layer's LSE of each query
        return torch.exp(lse.float() - own).reshape(S, *q.shape[:3])

    def keyset_mass(self, keys: torch.Tensor) -> torch.Tensor:
        """Mass on small key sets: the logits of every query against the union of the sets' keys only."""
        B, T, m = keys.shape
        anyk = keys.sum(-1) > 0  # (B, T)
        K = max(int(anyk.sum(-1).max()), 1)
        kpos = torch.argsort((~anyk).to(torch.int8), dim=-1, stable=True)[:, :K]  # (B, K) key positions first
        kin = torch.gather(anyk, 1, kpos)  # (B, K) real slots
        kk = torch.gather(self.k, 2, kpos[:, None, :, None].expand(-1, self.k.shape[1], -1, self.d))  # (B, Hkv, K, d)
        kk = kk.repeat_interleave(self.groups, 1)  # (B, H, K, d): K is small, so the copy is
        s = self.q @ kk.transpose(-1, -2)  # (B, H, T, K)
        i = torch.arange(T, device=keys.device)[None, None, :, None]
        key_real = kin[:, None, None, :]
        if self.spec.key_mask is not None:
            key_real = key_real & torch.gather(self.spec.key_mask, 1, kpos)[:, None, None, :]
        p = self._logits_to_probs(s, self.lse[..., None], self.spec.visible_pairs(i, kpos[:, None, None, :], key_real))
        p = p * kin[:, None, None, :]  # the self-visibility rule must not count a non-member key
        sel = torch.gather(keys.to(p.dtype), 1, kpos[:, :, None].expand(-1, -1, m))  # (B, K, m)
        return p @ sel[:, None]  # (B, H, T, m)
