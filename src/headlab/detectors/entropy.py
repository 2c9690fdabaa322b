"""``entropy``: the mean attention entropy of each head, in nats.

Per query i: H_i = −Σ_j p_ij · ln p_ij over the keys it may see (a key with p = 0 adds 0). Per sample: the
mean over real queries. 0 means every query puts all its weight on one key; ln(n) is the uniform spread over
n keys, so a decoder's first query always scores 0 and long sequences allow higher values. A ``rows``
detector: it needs every probability of a row, so the scan serves it by the chunked route (or eager).
"""

from __future__ import annotations

import torch

from headlab.detectors.base import Batch, Detector, register


@register
class EntropyDetector(Detector):
    name = "entropy"
    bounds = (0.0, float("inf"))  # nats: 0 for one key, ln(n) spread over n
    summary = "mean attention entropy per query, nats (needs whole rows: chunked or eager route)"
    meaning = "attention entropy"
    hint = "text whose attention is unusually diffuse"
    needs = "rows"

    def reduce_rows(self, probs: torch.Tensor, q0: int, k0: int, batch: Batch) -> torch.Tensor:
        p = probs.float()
        ent = -(torch.special.xlogy(p, p)).sum(-1)  # (B, H, C): xlogy gives 0·ln 0 = 0
        w = batch.query_mask[:, q0:q0 + p.shape[2]]
        return torch.einsum("bhc,bc->bh", ent, w)

    def reduce_plogp(self, plogp: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The row sum from each query's Σ_j p_ij ln p_ij (B, H, T), as a one-pass kernel accumulates it."""
        return -torch.einsum("bht,bt->bh", plogp.float(), batch.query_mask)

    def score(self, batch: Batch) -> torch.Tensor:
        return batch.row_sum(self.name) / batch.query_mask.sum(-1).clamp_min(1)[:, None]
