"""``linked``: attention mass on the (query, key) pairs a probe names, one column per label.

Some probes know, for a few query positions, exactly which key a head should read: in the retrieval task a
reader holding variable X should find X's definition (``query→def-var``) or the reference after it
(``query→def-ref``). A :class:`~headlab.corpus.Sample` lists these as ``links``: ``(label, query, key,
weight)``. The score of a label is the weighted mean of ``p[query, key]`` over the sample's links of that
label (weights let a control average several keys for one reader); NaN where the sample has none. Samples
from text have no links: this detector is for constructed probes.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from headlab.detectors.base import MASS, Batch, Detector, register
from headlab.errors import HeadlabError


@register
class LinkedDetector(Detector):
    name = "linked"
    bounds = MASS
    summary = "attention mass on the (query, key) pairs a constructed probe names, one column per label"
    meaning = "attention on the (query, key) pairs a constructed probe names"

    def __init__(self, labels: Sequence[str] = ("link",)):
        if not labels or len(set(labels)) != len(labels):
            raise HeadlabError(f"linked: labels must be distinct and at least one, not {list(labels)!r}")
        self.columns = tuple(labels)

    def settings(self) -> dict[str, Any]:
        return {"labels": list(self.columns or ())}

    def prepare(self, batch: Batch) -> None:
        for label in self.columns or ():
            batch.link_mass(f"linked:{label}", label)

    def score(self, batch: Batch) -> torch.Tensor:
        cols = []
        for label in self.columns or ():
            w = batch.cached(f"linked:w:{label}", lambda label=label: batch.link_weight(label))  # (B,)
            mass = batch.pair_mass(f"linked:{label}") / w.clamp_min(1e-12)[:, None]
            cols.append(torch.where((w > 0)[:, None], mass, float("nan")))
        return torch.stack(cols, -1)  # (B, H, C)
