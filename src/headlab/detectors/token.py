"""``token``: attention mass on a target token set (default: every token containing ``/``).

Per query: the sum of its attention on target keys. Per sample (``queries="can-see"``, default): the mean
over the queries that can see at least one target: in a decoder a query at i sees keys 0..i, so queries
before the first target are left out (they cannot attend to it); in an encoder every query sees every key.
``queries="all"`` averages over every real query instead. Samples without a target score NaN and do not
count. ``bare=True`` narrows the target to the plain ``/`` token (see ``LoadedModel.ids_containing``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from headlab.detectors.base import MASS, Batch, Detector, register
from headlab.errors import HeadlabError
from headlab.settings import Settings, setting

#: which queries a mass on target keys averages over
QUERIES = ("can-see", "all")


@dataclass(frozen=True)
class TokenOptions(Settings):
    """The token detector's options: its ``target``, ``bare`` and ``queries``."""

    FAMILY: ClassVar[str] = "token detector"

    target: str = setting("/", "the token detector's target character")
    bare: bool = setting(False, "target only the plain token, not merges like '://'")
    queries: str = setting("can-see", "the token score averages over queries that can see a target (can-see) or all "
                           "queries", choices=QUERIES)


TOKEN = TokenOptions()


@register
class TokenDetector(Detector):
    name = "token"
    bounds = MASS
    summary = "attention mass on a target token set (default '/')"
    label = "target mass (token)"
    meaning = "attention mass on the target token (`/` by default)"
    hint = "text dense in the target token: for `/`, path-, URL- or fraction-heavy text"
    threshold = 0.5  # the slash-dominance rule's θ
    options = TokenOptions

    def __init__(self, target: str = TOKEN.target, bare: bool = TOKEN.bare,
                 queries: str = TOKEN.queries):
        if not target:
            raise HeadlabError("the token detector needs a non-empty --target")
        if queries not in ("can-see", "all"):
            raise HeadlabError(f"queries must be 'can-see' or 'all', not {queries!r}")
        self.target, self.bare, self.queries = target, bare, queries
        self.target_ids: frozenset[int] = frozenset()

    def bind(self, loaded: Any) -> None:
        self.target_ids = loaded.ids_containing(self.target, bare=self.bare)
        if not self.target_ids:
            raise HeadlabError(f"no token of {loaded.name}'s vocabulary contains {self.target!r}")

    def settings(self) -> dict[str, Any]:
        return {"target": self.target, "bare": self.bare, "queries": self.queries,
                "n_target_ids": len(self.target_ids)}

    def target_mask(self, batch: Batch) -> torch.Tensor:
        return batch.id_mask(self._key, self.target_ids)  # (B, T)

    @property
    def _key(self) -> str:
        return f"token:{self.target}:{self.bare}"

    @property
    def _name(self) -> str:
        return f"{self._key}:{self.queries}"

    def prepare(self, batch: Batch) -> None:
        tgt = self.target_mask(batch)  # (B, T)
        q = self._queries(tgt, batch)  # (B, T)
        batch.cache[f"{self._name}:n"] = q.sum(-1)
        batch.cache[f"{self._name}:has"] = tgt.sum(-1) > 0
        batch.key_mass(self._name, q, tgt)  # query i counted, key j a target

    def score(self, batch: Batch) -> torch.Tensor:
        n = batch.cache[f"{self._name}:n"]
        out = batch.pair_mass(self._name) / n.clamp_min(1)[:, None]  # mean over counted queries
        ok = batch.cache[f"{self._name}:has"] & (n > 0)
        return torch.where(ok[:, None], out, float("nan"))

    def _queries(self, tgt: torch.Tensor, batch: Batch) -> torch.Tensor:
        q = batch.query_mask
        if self.queries == "all":
            return q
        if batch.causal:
            return q * (tgt.cumsum(-1) > 0).to(q.dtype)
        return q * (tgt.sum(-1, keepdim=True) > 0).to(q.dtype)
