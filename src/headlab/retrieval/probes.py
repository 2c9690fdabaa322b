"""The retrieval analyses' attention readings, scored by the census engine: each probe example becomes a
:class:`~headlab.corpus.Sample` whose ``links`` name the (reader, key) pairs an analysis reads, and the
``linked`` detector sums them on any capture route, a batch at a time. Pooled over examples by each label's
weight, so a label read at many readers in one example counts as many readings (the per-example loops did so).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from headlab.attention.routes import AUTO
from headlab.census.engine import score_samples
from headlab.corpus import Sample
from headlab.detectors import make
from headlab.nn import Transformer, as_loaded

Link = tuple[str, int, int, float]
#: examples per engine batch (probe sets are small and of similar length)
BATCH = 16


def link_sample(index: int, tokens: Sequence[int], links: Sequence[Link]) -> Sample:
    return Sample(index=index, doc_id="retrieval-probe", window=0, input_ids=tuple(tokens), links=tuple(links))


def pooled_mass(model: Transformer, samples: Sequence[Sample], labels: Sequence[str], route: str = AUTO
                ) -> np.ndarray:
    """(L, H, len(labels)): each label's attention mass over every sample's links of that label, weighted; NaN
    for a label no sample has."""
    loaded = as_loaded(model, None, "retrieval run")
    scores = np.concatenate([s["linked"] for _, s in score_samples(
        loaded, [make("linked", labels=list(labels))], samples, batch_size=BATCH, route=route)])  # (N, L, H, C)
    weight = np.array([[sum(w for lab, _, _, w in s.links if lab == label) for label in labels]
                       for s in samples], dtype=np.float64).reshape(len(samples), len(labels))  # (N, C)
    total = np.einsum("nlhc,nc->lhc", np.nan_to_num(scores.astype(np.float64)), weight)
    with np.errstate(invalid="ignore"):
        return total / np.where(weight.sum(0) > 0, weight.sum(0), np.nan)
