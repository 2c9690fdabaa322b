"""The detector contract and registry.

A detector turns one layer's attention probabilities into one score per head per sample:

    score(attn (B, H, T, T), batch) -> (B, H)  or  (B, H, C) for detectors with C columns (e.g. offsets)

NaN marks a sample for which the score is undefined (a ``token`` score on a sample without the target);
undefined samples are left out of every statistic. Padding positions never contribute: queries are
restricted to ``batch.query_mask`` and padded keys carry zero probability.

Register a new detector with ``@register`` on a :class:`Detector` subclass; ``make(name, **options)`` builds
one by name. No if-chains: the scan, the CLI and the docs read this registry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, TypeVar

import torch

from ..errors import HeadlabError


@dataclass
class Batch:
    """One padded batch as detectors see it.

    input_ids: (B, T) long; attention_mask: (B, T) bool, False on padding; causal: decoder attention.
    ``cache`` holds per-batch tensors that every layer reuses (built once, by the first layer that asks).

    Shared reductions. Almost every score is a weighted sum of attention over (query, key) pairs,
    ``Σ_ij A[i, j] · W[i, j]``, with a sparse weight matrix W (a target column times the queries that can see
    it, a sub-diagonal, the pairs of repeated tokens, ...). Detectors declare their W in
    :meth:`Detector.prepare`; :meth:`begin_layer` then gathers the union of all their nonzero pairs once and
    computes every sum in one small matrix product per layer, instead of one pass over ``(B, H, T, T)`` per
    detector. :func:`score_layer` runs that protocol.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    causal: bool
    cache: dict[str, torch.Tensor] = field(default_factory=dict)
    _weights: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)
    _fused: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, repr=False)
    _layer: torch.Tensor | None = field(default=None, repr=False)

    @property
    def query_mask(self) -> torch.Tensor:  # (B, T) float: 1 on real query positions
        return self.cached("query_mask", lambda: self.attention_mask.to(torch.float32))

    def cached(self, key: str, build: Callable[[], torch.Tensor]) -> torch.Tensor:
        if key not in self.cache:
            self.cache[key] = build()
        return self.cache[key]

    def id_mask(self, key: str, ids: frozenset[int]) -> torch.Tensor:
        """(B, T) float mask of positions whose token id is in ``ids`` (padding excluded)."""
        def build() -> torch.Tensor:
            top = int(self.input_ids.max())
            table = torch.zeros(top + 1, dtype=torch.bool, device=self.input_ids.device)
            idx = torch.tensor(sorted(i for i in ids if i <= top), dtype=torch.long, device=table.device)
            table[idx] = True
            return (table[self.input_ids] & self.attention_mask).to(torch.float32)
        return self.cached(f"ids:{key}", build)

    # --- shared reductions -------------------------------------------------------------------------------
    def add_pair_weights(self, name: str, weights: torch.Tensor) -> None:
        """Ask for ``Σ_ij A[b, h, i, j] · weights[b, i, j]`` per sample and head; ``weights`` is (B, T, T)."""
        if name not in self._weights:
            self._weights[name] = weights.to(torch.float32)
            self._fused = None

    def _fuse(self) -> tuple[torch.Tensor, torch.Tensor]:
        B, T = self.input_ids.shape
        flat = [w.reshape(B, T * T) for w in self._weights.values()]
        nz = flat[0] != 0
        for w in flat[1:]:
            nz |= w != 0  # (B, T*T): pairs any detector needs
        counts = nz.sum(-1)  # (B,)
        n = max(int(counts.max()), 1)
        # compact each sample's needed pair indices to the left, padded with index 0 at weight 0
        rows, cols = nz.nonzero(as_tuple=True)  # sorted by sample, then pair index
        slot = torch.arange(rows.numel(), device=rows.device) - (torch.cumsum(counts, 0) - counts)[rows]
        idx = torch.zeros(B, n, dtype=torch.long, device=nz.device)
        idx[rows, slot] = cols
        valid = torch.arange(n, device=nz.device)[None, :] < counts[:, None]  # (B, N)
        weights = torch.stack([w.gather(1, idx) for w in flat], -1) * valid[:, :, None]  # (B, N, P)
        return idx, weights

    def begin_layer(self, attn: torch.Tensor) -> None:
        """Compute every declared pair sum of this layer's ``attn`` (B, H, T, T): one gather, one bmm."""
        if not self._weights:
            self._layer = None
            return
        if self._fused is None:
            self._fused = self._fuse()
        idx, weights = self._fused
        B, H, T, _ = attn.shape
        picked = attn.reshape(B, H, T * T).gather(2, idx[:, None, :].expand(B, H, idx.shape[1]))  # (B, H, N)
        self._layer = torch.bmm(picked, weights.to(attn.dtype))  # (B, H, P)

    def end_layer(self) -> None:
        self._layer = None

    def pair_mass(self, name: str) -> torch.Tensor:
        """(B, H): this layer's ``Σ A ⊙ W`` for the weights declared as ``name``."""
        if self._layer is None:
            raise RuntimeError("pair_mass outside begin_layer/end_layer (use score_layer)")
        return self._layer[..., list(self._weights).index(name)]


class Detector(ABC):
    """Base class of head detectors; subclasses set ``name`` and implement :meth:`score`."""

    name: ClassVar[str]
    summary: ClassVar[str]
    #: names of the columns when the detector returns (B, H, C); None for one score per head.
    columns: tuple[str, ...] | None = None

    def bind(self, loaded: Any) -> None:
        """Resolve model-specific facts (token ids, special tokens) once, before the first batch."""

    def prepare(self, batch: Batch) -> None:
        """Declare this batch's pair weights (``batch.add_pair_weights``), once per batch."""

    @abstractmethod
    def score(self, attn: torch.Tensor, batch: Batch) -> torch.Tensor:
        """(B, H, T, T) probabilities → (B, H) or (B, H, C) scores; NaN where undefined."""

    def settings(self) -> dict[str, Any]:
        return {}


DETECTORS: dict[str, type[Detector]] = {}
D = TypeVar("D", bound=type[Detector])


def register(cls: D) -> D:
    if cls.name in DETECTORS:
        raise ValueError(f"detector {cls.name!r} is already registered")
    DETECTORS[cls.name] = cls
    return cls


def make(name: str, **options: Any) -> Detector:
    """Build the detector registered as ``name`` (``-`` and ``_`` are interchangeable)."""
    key = name.replace("_", "-")
    cls = DETECTORS.get(key)
    if cls is None:
        raise HeadlabError(f"unknown detector '{name}'; registered: {', '.join(sorted(DETECTORS))}")
    try:
        return cls(**options)
    except TypeError as exc:
        raise HeadlabError(f"detector '{key}': {exc}") from exc


def prepare_batch(detectors: "list[Detector] | tuple[Detector, ...]", batch: Batch) -> None:
    for d in detectors:
        d.prepare(batch)


def score_layer(detectors: "list[Detector] | tuple[Detector, ...]", attn: torch.Tensor,
                batch: Batch) -> dict[str, torch.Tensor]:
    """Scores of one layer: ``{name: (B, H) or (B, H, C)}``. Call :func:`prepare_batch` once per batch first."""
    batch.begin_layer(attn)
    try:
        return {d.name: d.score(attn, batch) for d in detectors}
    finally:
        batch.end_layer()
