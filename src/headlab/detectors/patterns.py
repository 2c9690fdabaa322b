"""``previous-token``, ``duplicate-token``, ``induction``: TransformerLens ``detect_head`` scores ("mul").

TransformerLens scores a head on one sequence as sum(A ⊙ P) / sum(A) for a 0/1 lower-triangular pattern P;
since every row of A sums to 1, sum(A) is the number of queries. We use the same patterns and the same
normalisation per sample (restricted to real tokens), and the scan averages over samples, as ``detect_head``
averages over a list of strings:

* previous-token: P[i, i−1] = 1;
* duplicate-token: P[i, j] = 1 for j < i with token[j] == token[i];
* induction: P[i, j] = 1 for 1 ≤ j ≤ i with token[j−1] == token[i] (the duplicate pattern shifted right).

Patterns are lower-triangular for encoders too (as in TransformerLens), so encoder scores count only
attention to earlier keys. The patterns are declared sparsely (a diagonal; matches of the query's token,
shifted by 0 or 1), never as a (T, T) matrix.
"""

from __future__ import annotations

import torch

from headlab.detectors.base import MASS, Batch, Detector, register


def _per_query(total: torch.Tensor, batch: Batch) -> torch.Tensor:
    """TransformerLens divides by sum(A) = the number of (real) queries."""
    return total / batch.query_mask.sum(-1).clamp_min(1)[:, None]


@register
class PreviousTokenDetector(Detector):
    name = "previous-token"
    bounds = MASS
    summary = "mass on the previous token (TransformerLens 'mul')"
    meaning = "attention to the previous token"
    hint = "text whose tokens are read in fragments (code, markup)"
    threshold = 0.4  # ours, as the tracker's

    def prepare(self, batch: Batch) -> None:
        batch.diagonal_mass("previous", 1, batch.query_mask)

    def score(self, batch: Batch) -> torch.Tensor:
        return _per_query(batch.pair_mass("previous"), batch)


@register
class DuplicateTokenDetector(Detector):
    name = "duplicate-token"
    bounds = MASS
    summary = "mass on earlier copies of the current token (TransformerLens 'mul')"
    meaning = "attention to earlier copies of the same token"
    hint = "repetitive text or boilerplate"

    def prepare(self, batch: Batch) -> None:
        batch.match_mass("duplicate", 0, batch.query_mask)

    def score(self, batch: Batch) -> torch.Tensor:
        return _per_query(batch.pair_mass("duplicate"), batch)


@register
class InductionDetector(Detector):
    name = "induction"
    bounds = MASS
    summary = "mass on tokens that followed earlier copies of the current token (TransformerLens 'mul')"
    meaning = "induction (attending to what followed an earlier copy)"
    hint = "repeated passages or boilerplate"
    threshold = 0.4  # ours, as the tracker's

    def prepare(self, batch: Batch) -> None:
        batch.match_mass("induction", 1, batch.query_mask)

    def score(self, batch: Batch) -> torch.Tensor:
        return _per_query(batch.pair_mass("induction"), batch)
