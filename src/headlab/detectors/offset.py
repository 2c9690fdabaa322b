"""``offset``: the slash-pattern score of Cheng et al. (2026), SlashScore(Δ), for Δ = 0..K.

SlashScore(Δ) of one sample = mean over real queries i ≥ Δ of A[i, i−Δ] (the Δ-th sub-diagonal), i.e.
1/(N−Δ) Σ_{i=Δ}^{N−1} A[i, i−Δ] for N real tokens. NaN when N ≤ Δ. The scan reports a head's best Δ (the
column with the largest mean) as ``offset`` and that Δ as ``offset_delta``. This is the "slash pattern"
meaning of slash (a fixed diagonal), not attention to the ``/`` token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from headlab.detectors.base import MASS, Batch, Detector, register
from headlab.errors import HeadlabError
from headlab.settings import Settings, setting


@dataclass(frozen=True)
class OffsetOptions(Settings):
    """The offset detector's option: the largest Δ it scores."""

    FAMILY: ClassVar[str] = "offset detector"

    max_offset: int = setting(8, "the offset detector scores Δ = 0..K")


OFFSET = OffsetOptions()


@register
class OffsetDetector(Detector):
    name = "offset"
    bounds = MASS
    summary = "SlashScore(Δ): mean attention on the Δ-th sub-diagonal, Δ = 0..K (Cheng et al. 2026)"
    label = "SlashScore(Δ), best Δ (offset)"
    meaning = "attention along a fixed diagonal (SlashScore at the head's best Δ)"
    hint = "text with a regular local pattern (tables, code, lists)"
    threshold = 0.5  # κ of the slash-pattern meaning (ours)
    options = OffsetOptions

    def __init__(self, max_offset: int = OFFSET.max_offset):
        if max_offset < 0:
            raise HeadlabError("max_offset must be >= 0")
        self.max_offset = max_offset
        self.columns = tuple(str(d) for d in range(max_offset + 1))

    def settings(self) -> dict[str, Any]:
        return {"max_offset": self.max_offset}

    @classmethod
    def summarize(cls, name: str, value: Any) -> dict[str, Any]:
        """The best Δ's score (``offset``), that Δ (``offset_delta``) and every Δ's (``offset_by_delta``)."""
        by_delta = np.asarray(value, dtype=float)
        best = None if np.all(np.isnan(by_delta)) else int(np.nanargmax(by_delta))
        return {"offset": float(by_delta[best]) if best is not None else float("nan"), "offset_delta": best,
                "offset_by_delta": [float(x) for x in by_delta]}

    def prepare(self, batch: Batch) -> None:
        for d in range(self.max_offset + 1):
            batch.diagonal_mass(f"offset:{d}", d, batch.query_mask)

    def score(self, batch: Batch) -> torch.Tensor:
        T = batch.query_mask.shape[1]
        cols = []
        for d in range(self.max_offset + 1):
            n = batch.query_mask[:, d:].sum(-1) if d < T else batch.query_mask.new_zeros(batch.query_mask.shape[0])
            s = batch.pair_mass(f"offset:{d}") / n.clamp_min(1)[:, None]  # mean over queries i >= d
            cols.append(torch.where((n > 0)[:, None], s, float("nan")))
        return torch.stack(cols, dim=-1)  # (B, H, K+1)
