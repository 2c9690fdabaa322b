"""``previous-token``, ``duplicate-token``, ``induction``: TransformerLens ``detect_head`` scores ("mul").

TransformerLens scores a head on one sequence as sum(A ⊙ P) / sum(A) for a 0/1 lower-triangular pattern P;
since every row of A sums to 1, sum(A) is the number of queries. We use the same patterns and the same
normalisation per sample (restricted to real tokens), and the scan averages over samples, as ``detect_head``
averages over a list of strings:

* previous-token: P[i, i−1] = 1;
* duplicate-token: P[i, j] = 1 for j < i with token[j] == token[i];
* induction: P[i, j] = 1 for 1 ≤ j ≤ i with token[j−1] == token[i] (the duplicate pattern shifted right).

Patterns are lower-triangular for encoders too (as in TransformerLens), so encoder scores count only
attention to earlier keys.
"""

from __future__ import annotations

import torch

from .base import Batch, Detector, register


def _same_token(batch: Batch) -> torch.Tensor:
    """(B, T, T) bool: token[i] == token[j] on real tokens, shared by both patterns."""
    def build() -> torch.Tensor:
        ids, m = batch.input_ids, batch.attention_mask
        return (ids[:, :, None] == ids[:, None, :]) & m[:, :, None] & m[:, None, :]
    return batch.cached("same-token", build)


def duplicate_pattern(batch: Batch) -> torch.Tensor:
    """(B, T, T) bool: P[i, j] = token[j] == token[i] and j < i."""
    return _same_token(batch).tril(-1)


def induction_pattern(batch: Batch) -> torch.Tensor:
    """(B, T, T) bool: P[i, j] = token[j-1] == token[i] and 1 <= j <= i (duplicate shifted right by one)."""
    same = _same_token(batch)
    out = torch.zeros_like(same)
    out[:, :, 1:] = same[:, :, :-1]  # same[i, j-1]
    return out.tril(0) & batch.attention_mask[:, None, :]


def sub_diagonal(batch: Batch, d: int) -> torch.Tensor:
    """(B, T, T) float: 1 at (i, i-d) for real queries i >= d."""
    q = batch.query_mask  # (B, T)
    T = q.shape[1]
    if d >= T:
        return q.new_zeros(q.shape[0], T, T)
    return torch.diag_embed(q[:, d:], offset=-d)


def _per_query(total: torch.Tensor, batch: Batch) -> torch.Tensor:
    """TransformerLens divides by sum(A) = the number of (real) queries."""
    return total / batch.query_mask.sum(-1).clamp_min(1)[:, None]


@register
class PreviousTokenDetector(Detector):
    name = "previous-token"
    summary = "mass on the previous token (TransformerLens 'mul')"

    def prepare(self, batch: Batch) -> None:
        batch.add_pair_weights("previous", sub_diagonal(batch, 1))

    def score(self, attn: torch.Tensor, batch: Batch) -> torch.Tensor:
        return _per_query(batch.pair_mass("previous"), batch)


@register
class DuplicateTokenDetector(Detector):
    name = "duplicate-token"
    summary = "mass on earlier copies of the current token (TransformerLens 'mul')"

    def prepare(self, batch: Batch) -> None:
        batch.add_pair_weights("duplicate", duplicate_pattern(batch))

    def score(self, attn: torch.Tensor, batch: Batch) -> torch.Tensor:
        return _per_query(batch.pair_mass("duplicate"), batch)


@register
class InductionDetector(Detector):
    name = "induction"
    summary = "mass on tokens that followed earlier copies of the current token (TransformerLens 'mul')"

    def prepare(self, batch: Batch) -> None:
        batch.add_pair_weights("induction", induction_pattern(batch))

    def score(self, attn: torch.Tensor, batch: Batch) -> torch.Tensor:
        return _per_query(batch.pair_mass("induction"), batch)
