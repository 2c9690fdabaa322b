"""The Triton route's side of the census: what blocks it for a model and a set of detectors, and one layer's
declared sums from one pass of :func:`~headlab.attention.routes.triton_census.census_attention`.

Where the fused route answers the detectors' needs (:mod:`headlab.detectors.needs`) through a view of the
layer's logits after the forward, this route answers them during it: the kernel returns, per query, the mass on
every declared key set, the band of diagonals up to the largest Δ declared, the token-match masses at each
declared shift and Σ p log p; each declared sum is then that per-query column weighted by its queries, so the
layer's work is one kernel launch and a few (B, H, T) products, with nothing kept for later. Explicit links
(the retrieval probes' reader → key pairs) are not served (a link is one pair, not a column of a query's row:
the fused, chunked and eager routes read them); a ``rows`` detector is served where it can reduce Σ p log p
(``reduce_plogp``, the entropy detector's), and blocks the route otherwise.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch import nn

from headlab.attention.routes.spec import AttentionSpec
from headlab.attention.routes.triton_census import available, census_attention
from headlab.attention.rules import kernel_supported
from headlab.detectors import Batch, Detector
from headlab.errors import HeadlabError


def blocked(model: nn.Module, detectors: Sequence[Detector]) -> str | None:
    """Why the Triton route cannot serve ``model`` and ``detectors`` here, or None."""
    if not available():
        return "the triton route needs triton and a CUDA device (or TRITON_INTERPRET=1, Triton's CPU interpreter)"
    reason = kernel_supported(model)
    if reason is not None:
        return reason
    rows = [d.name for d in detectors if d.needs == "rows" and not hasattr(d, "reduce_plogp")]
    return f"detector(s) {', '.join(rows)} need whole rows" if rows else None


def layer_sums(batch: Batch, detectors: Sequence[Detector], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               spec: AttentionSpec) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """One layer in one kernel pass: its output (B, H, T, d) and the batch's declared sums ``{name: (B, H)}``
    and row reductions ``{detector: (B, H)}``, as the other routes hand them to the detectors."""
    needs = batch.needs
    if needs.links:
        raise HeadlabError(f"the triton route reads no explicit links ({', '.join(needs.links)}); use --route "
                           "fused, chunked or eager for probes that name (query, key) pairs")
    deltas = [dg.delta for dg in needs.diagonals.values()]
    out, per_query = census_attention(
        q, k, v, scale=spec.scale, causal=spec.causal, valid=spec.key_mask, window=spec.window,
        softcap=spec.softcap, keys=needs.key_indicators(), band=max(deltas) if deltas else None,
        ids=batch.input_ids, shifts=tuple(m.shift for m in needs.matches.values()))
    sums: dict[str, torch.Tensor] = {}
    weigh = lambda col, w: torch.einsum("bht,bt->bh", col, w.to(col.dtype))  # noqa: E731
    for c, (name, ks) in enumerate(needs.keysets.items()):
        sums[name] = weigh(per_query.keyset[..., c], ks.queries)  # type: ignore[index]
    for name, dg in needs.diagonals.items():
        sums[name] = weigh(per_query.band[..., dg.delta], dg.queries)  # type: ignore[index]
    for c, (name, m) in enumerate(needs.matches.items()):
        sums[name] = weigh(per_query.match[..., c], m.queries)  # type: ignore[index]
    rows = {d.name: d.reduce_plogp(per_query.plogp, batch)  # type: ignore[attr-defined]
            for d in detectors if d.needs == "rows"}
    return out, sums, rows


def handler(scorer: Any) -> Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, AttentionSpec], torch.Tensor]:
    """The kernel-seam handler of a :class:`~headlab.attention.routes.LayerScorer` (its ``batch``, ``detectors``
    and ``reduced`` list) that computes each layer in one pass and hands its sums on with the reduced layers, so
    they are scored with the others at the scorer's flush."""

    def handle(layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, spec: AttentionSpec) -> torch.Tensor:
        out, sums, rows = layer_sums(scorer.batch, scorer.detectors, q, k, v, spec)
        scorer.reduced.append((layer, q.shape[1], sums, rows))
        return out

    return handle
