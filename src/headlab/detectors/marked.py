"""``marked``: attention mass on the marked target positions of constructed stimuli.

Like ``token``, but the keys are the token positions a stimulus marks (``Sample.targets``, from character
spans), not a vocabulary set: a control stimulus that swaps `/` for `-` marks the `-`, so `/` and its control
are measured in the same template slot. Same query rule as ``token`` (``can-see`` by default). Samples
without a marked target score NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from headlab.detectors.base import MASS, Batch, Detector, register
from headlab.detectors.token import TokenOptions
from headlab.errors import HeadlabError
from headlab.settings import Settings


@dataclass(frozen=True)
class MarkedOptions(Settings):
    """The marked detector's option: which ``queries`` it averages over, as the token detector's."""

    FAMILY: ClassVar[str] = "marked detector"

    queries: str = TokenOptions.field_of("queries")


MARKED = MarkedOptions()


@register
class MarkedDetector(Detector):
    name = "marked"
    bounds = MASS
    summary = "attention mass on the marked target positions of constructed stimuli"
    meaning = "attention on the marked target positions of constructed stimuli"

    options = MarkedOptions

    def __init__(self, queries: str = MARKED.queries):
        if queries not in ("can-see", "all"):
            raise HeadlabError(f"queries must be 'can-see' or 'all', not {queries!r}")
        self.queries = queries

    def settings(self) -> dict[str, Any]:
        return {"queries": self.queries}

    def prepare(self, batch: Batch) -> None:
        tgt = batch.cache.get("marked")
        if tgt is None:
            tgt = torch.zeros_like(batch.query_mask)
        tgt = tgt * batch.query_mask
        q = batch.query_mask
        if self.queries == "can-see":
            q = q * ((tgt.cumsum(-1) > 0) if batch.causal else (tgt.sum(-1, keepdim=True) > 0)).to(q.dtype)
        batch.cache["marked:n"] = q.sum(-1)
        batch.key_mass("marked", q, tgt)

    def score(self, batch: Batch) -> torch.Tensor:
        n = batch.cache["marked:n"]
        out = batch.pair_mass("marked") / n.clamp_min(1)[:, None]
        return torch.where((n > 0)[:, None], out, float("nan"))
