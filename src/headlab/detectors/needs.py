"""What detectors ask of a layer's attention, declared sparsely, and how any capture route answers it.

Every ``pairs`` score headlab ships is a sum of attention probabilities ``p[b, h, i, j]`` over a small set of
(query, key) pairs, each query carrying a weight ``w[b, i]``. Four shapes of pair set cover them all, and none
needs a ``(T, T)`` tensor to declare or to evaluate:

* :class:`KeySet` — a fixed key set (the ``/`` tokens, position 0 and separators, marked stimuli):
  ``Σ_i w_i Σ_j p_ij · keys_j``. The fused route reads ``Σ_j p_ij · keys_j`` from an indicator column of V.
* :class:`Diagonal` — the Δ-th sub-diagonal (SlashScore(Δ), previous-token): ``Σ_{i≥Δ} w_i · p_{i,i−Δ}``.
* :class:`Matches` — keys that hold the query's token, shifted by ``shift`` (duplicate-token: 0, induction:
  1): ``Σ_i w_i Σ_{j<i, tok_j = tok_i} p_{i, j+shift}``. Positions are grouped by token id, so the pairs of
  one group form a small ``(c, c)`` block and are evaluated as one batched matrix product, never as gathers
  of single pairs (which would be memory-bound at long context).
* :class:`Links` — explicit (query, key) pairs that a probe names, each with a weight (the retrieval task's
  reader → definition lookups, one key per reader): ``Σ_n w_n · p_{i_n, j_n}``. Read as blocks of one pair, so
  they suit probes with a few links a sample, not every query of a long text.

A :class:`LayerView` answers three primitive questions (per-query key-set mass, a band of diagonals, blocks
of pairs);
:func:`evaluate` turns those answers into ``{name: (B, H)}`` sums. Routes differ only in their view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class KeySet:
    queries: torch.Tensor  # (B, T) float weight of each query
    keys: torch.Tensor     # (B, T) float 0/1 indicator of the key set


@dataclass(frozen=True)
class Diagonal:
    delta: int
    queries: torch.Tensor  # (B, T); only queries i >= delta count


@dataclass(frozen=True)
class Matches:
    shift: int
    queries: torch.Tensor  # (B, T)


@dataclass(frozen=True)
class Links:
    at: torch.Tensor       # (n, 3) long: sample, query position, key position of each link
    weights: torch.Tensor  # (n,) float
    shape: tuple[int, int]  # the batch's (B, T)


@dataclass
class Groups:
    """Real positions grouped by token id, in padded buckets: ``pos[g, a]`` is the a-th position (ascending) of
    group g as a flat index ``b * T + t``; ``valid`` marks real slots. Buckets have power-of-two widths so the
    blocks evaluated stay within 2x (in each dimension) of the true group sizes."""

    buckets: list[tuple[torch.Tensor, torch.Tensor]]  # [(pos (G, c) long, valid (G, c) bool)]


def token_groups(input_ids: torch.Tensor, real: torch.Tensor) -> Groups:
    """Group the real positions of every sample by token id (groups of one are dropped: they have no pair)."""
    B, T = input_ids.shape
    flat_ids = torch.where(
        real, input_ids + torch.arange(B, device=input_ids.device)[:, None] * (int(input_ids.max()) + 1), -1
    ).reshape(-1)  # (B*T,) sample-unique token keys, -1 on padding
    order = torch.argsort(flat_ids, stable=True)  # positions sorted by (sample, token), then position
    keys = flat_ids[order]
    keep = keys >= 0
    order, keys = order[keep], keys[keep]
    if order.numel() == 0:
        return Groups([])
    _, counts = torch.unique_consecutive(keys, return_counts=True)
    starts = torch.cumsum(counts, 0) - counts
    buckets = []
    width = 2
    big = counts >= 2
    while bool(big.any()):
        sel = big & (counts <= width)
        if bool(sel.any()):
            c, s = counts[sel], starts[sel]
            slot = torch.arange(width, device=order.device)
            valid = slot[None, :] < c[:, None]  # (G, width)
            idx = (s[:, None] + slot[None, :]).clamp_max(order.numel() - 1)
            buckets.append((torch.where(valid, order[idx], 0), valid))
        big &= counts > width
        width *= 2
    return Groups(buckets)


class LayerView(Protocol):
    """One layer's attention as a route exposes it (H query heads, B samples, T positions)."""

    def keyset_mass(self, keys: torch.Tensor) -> torch.Tensor:
        """keys (B, T, m) 0/1 → (B, H, T, m): each query's probability mass on each key set."""

    def band(self, K: int) -> torch.Tensor:
        """(B, H, T, K + 1): column delta holds ``p[b, h, i, i − delta]``, 0 where i < delta."""

    def blocks(self, rows: torch.Tensor, cols: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """rows (G, r), cols (G, c): flat positions ``b * T + t``, each row of both in one sample; keep (G, r, c)
        bool → (G, H, r, c) probabilities ``p[b, h, rows[g, a], cols[g, c]]``, 0 where not ``keep``."""


@dataclass
class Needs:
    """The union of what a batch's detectors declared, by name."""

    keysets: dict[str, KeySet] = field(default_factory=dict)
    diagonals: dict[str, Diagonal] = field(default_factory=dict)
    matches: dict[str, Matches] = field(default_factory=dict)
    links: dict[str, Links] = field(default_factory=dict)

    def names(self) -> list[str]:
        return [*self.keysets, *self.diagonals, *self.matches, *self.links]

    def key_indicators(self) -> torch.Tensor | None:
        """(B, T, m) indicators of the declared key sets (m = number of distinct sets), or None."""
        if not self.keysets:
            return None
        return torch.stack([k.keys for k in self.keysets.values()], -1)


@dataclass(frozen=True)
class _Slice:
    rows: torch.Tensor  # (G, r) flat query positions
    cols: torch.Tensor  # (G, S * a) flat key positions: for each shift, the group's first a positions + shift
    keep: torch.Tensor  # (G, r, S * a) bool: key slot earlier than the query slot, both real
    weights: torch.Tensor  # (G, r, S) query weight of each shift's declaration
    sample: torch.Tensor  # (G,) the sample each group lies in
    width: int  # the bucket's group width c


def match_plan(needs: Needs, groups: Groups, T: int, max_pairs: int) -> list[_Slice]:
    """The blocks that serve every ``match_mass`` declaration at once (all shifts share the query rows), cut
    into slices of query slots of at most ``max_pairs`` (group, query, key) triples each: one token that fills
    half of an 8k-token document would otherwise be one 4k x 4k block per head."""
    shifts = [m.shift for m in needs.matches.values()]
    weights = torch.stack([m.queries.reshape(-1) for m in needs.matches.values()], -1)  # (B*T, S)
    n_flat = weights.shape[0]
    plan = []
    for pos, valid in groups.buckets:
        G, c = pos.shape
        step = max(1, max_pairs // max(1, G * len(shifts) * c))
        for a0 in range(1, c, step):  # query slot 0 has no earlier key
            a1 = min(c, a0 + step)
            rows = pos[:, a0:a1]
            cols = torch.cat([(pos[:, :a1] + s).clamp_max(n_flat - 1) for s in shifts], 1)
            slot = torch.arange(a0, a1, device=pos.device)[:, None]
            lower = torch.arange(a1, device=pos.device)[None, :] < slot  # (r, a1)
            keep = lower[None] & valid[:, None, :a1] & valid[:, a0:a1, None]  # (G, r, a1)
            plan.append(
                _Slice(
                    rows, cols, keep.repeat(1, 1, len(shifts)), weights[rows] * valid[:, a0:a1, None], pos[:, 0] // T, c
                )
            )
    return plan


def pattern_names(needs: Needs) -> list[str]:
    """The sums :func:`pair_pattern` carries, in its column order: all but the diagonals, which one strided view
    of the probabilities reads for less than a column each."""
    return [*needs.keysets, *needs.matches, *needs.links]


def pair_pattern(needs: Needs, input_ids: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """The declared sums of :func:`pattern_names` as columns of dense pair weights, ``(B, T·T, n)``: the weight of
    pair (i, j) is what query i's declaration gives key j (a token match gives key j + shift for every earlier
    real position j holding query i's token, as :func:`match_plan`'s blocks visit them). For short windows, where
    one product of a layer's whole probabilities with it replaces every gather and per-set product; the token
    matches come from one comparison of the ids, without the token groups the blocks need."""
    B, T = input_ids.shape
    names = pattern_names(needs)
    # Built column-major, (B, n, T, T): a layer's (H, T·T) @ (T·T, n) product reads it 3.8x faster that way than
    # row-major (0.27 against 1.04 ms a layer at 8 windows of 128 tokens, 12 heads, 2 threads).
    pattern = torch.zeros(B, len(names), T, T, device=input_ids.device)
    col = {name: c for c, name in enumerate(names)}
    for name, ks in needs.keysets.items():
        pattern[:, col[name]] = ks.queries[:, :, None] * ks.keys[:, None, :]
    if needs.matches:
        pair = real[:, :, None] & real[:, None, :]
        same = ((input_ids[:, :, None] == input_ids[:, None, :]) & pair).tril(-1)  # (B, T, T): j < i, same token
        for name, m in needs.matches.items():
            moved = same if m.shift == 0 else F.pad(same[..., :max(0, T - m.shift)], (min(m.shift, T), 0))
            pattern[:, col[name]] = m.queries[:, :, None] * moved  # key j + shift
    for name, lk in needs.links.items():
        n = lk.at.shape[0]
        at = (lk.at[:, 0], torch.full((n,), col[name], device=input_ids.device), lk.at[:, 1], lk.at[:, 2])
        pattern.index_put_(at, lk.weights, accumulate=True)
    return pattern.reshape(B, len(names), T * T).transpose(1, 2)  # (B, T·T, n), a view


def evaluate(
    needs: Needs,
    view: LayerView,
    groups: Groups | None,
    n_heads: int,
    plan: Callable[[], list[_Slice]] | None = None,
    keyset_mass: torch.Tensor | None = None,
    pattern: Callable[[], torch.Tensor] | None = None,
) -> dict[str, torch.Tensor]:
    """Every declared sum of one layer (or of layers stacked along the head axis): ``{name: (B, H)}``.

    Where the view holds whole probabilities and ``pattern()`` (:func:`pair_pattern` of this batch) is given,
    every sum but the diagonals is one product with it, and the diagonals come from the view's band. Otherwise:
    ``keyset_mass`` (B, H, T, m), when the route already has it (the fused kernel's indicator columns), is used
    instead of asking the view; matches are read through the view's fused ``match_mass`` where it has one, else
    through ``plan()`` (:func:`match_plan`) and explicit blocks.
    """
    out: dict[str, torch.Tensor] = {}
    columns = pattern_names(needs)
    dense = pattern is not None and hasattr(view, "pattern_sums") and bool(columns)
    if dense:
        sums = view.pattern_sums(pattern())  # type: ignore[attr-defined, misc]  # (B, H, n)
        out.update({name: sums[..., c] for c, name in enumerate(columns)})
    if needs.keysets and not dense:
        mass = keyset_mass if keyset_mass is not None else view.keyset_mass(needs.key_indicators())  # type: ignore[arg-type]
        for c, (name, ks) in enumerate(needs.keysets.items()):
            out[name] = torch.einsum("bht,bt->bh", mass[..., c].float(), ks.queries)
    if needs.diagonals:
        band = view.band(max(dg.delta for dg in needs.diagonals.values())).float()  # (B, H, T, K+1)
        deltas = [dg.delta for dg in needs.diagonals.values()]
        weights = torch.stack([dg.queries for dg in needs.diagonals.values()], -1)  # (B, T, n)
        sums = torch.einsum("bhin,bin->bhn", band[..., deltas], weights)  # every diagonal in one product
        out.update({name: sums[..., c] for c, name in enumerate(needs.diagonals)})
    if needs.matches and groups is not None and not dense:
        first = next(iter(needs.matches.values())).queries
        S = len(needs.matches)
        total = torch.zeros(first.shape[0], n_heads, S, device=first.device)
        weights = torch.stack([m.queries.reshape(-1) for m in needs.matches.values()], -1)  # (B*T, S)
        shifts = [m.shift for m in needs.matches.values()]
        T = first.shape[1]
        fused_from = getattr(view, "KERNEL_GROUP", None) if getattr(view, "fuses_matches", False) else None
        if fused_from is not None:
            for pos, valid in groups.buckets:
                if pos.shape[1] >= fused_from:
                    mass = view.match_mass(pos, shifts)  # type: ignore[attr-defined]  # (S, G, H, c-1)
                    w = weights[pos[:, 1:]] * valid[:, 1:, None]  # (G, c-1, S)
                    total.index_add_(0, pos[:, 0] // T, torch.einsum("sghc,gcs->ghs", mass, w))
        for sl in plan() if plan is not None else []:
            if fused_from is not None and sl.width >= fused_from:
                continue
            G, r = sl.rows.shape
            probs = view.blocks(sl.rows, sl.cols, sl.keep).float()  # (G, H, r, S * a)
            per_query = probs.reshape(G, n_heads, r, S, -1).sum(-1)  # (G, H, r, S)
            total.index_add_(0, sl.sample, torch.einsum("ghrs,grs->ghs", per_query, sl.weights))
        for c, name in enumerate(needs.matches):
            out[name] = total[..., c]
    if needs.links and not dense:
        out.update(_link_mass(needs.links, view, n_heads))
    return out


def _link_mass(links: dict[str, Links], view: LayerView, n_heads: int) -> dict[str, torch.Tensor]:
    """Every declared link set in one call of ``view.blocks``: each link a block of one (query, key) pair."""
    first = next(iter(links.values()))
    B, T = first.shape
    out = {name: first.weights.new_zeros(B, n_heads) for name in links}
    at = torch.cat([lk.at for lk in links.values()])  # (n, 3)
    if not at.shape[0]:
        return out
    rows, cols = (at[:, 0] * T + at[:, 1])[:, None], (at[:, 0] * T + at[:, 2])[:, None]
    keep = torch.ones(at.shape[0], 1, 1, dtype=torch.bool, device=at.device)
    p = view.blocks(rows, cols, keep).float()[:, :, 0, 0]  # (n, H)
    start = 0
    for name, lk in links.items():
        n = lk.at.shape[0]
        out[name].index_add_(0, lk.at[:, 0], p[start:start + n] * lk.weights[:, None])
        start += n
    return out
