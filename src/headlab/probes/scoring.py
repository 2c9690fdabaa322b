"""Per-head probe metrics, defined once: each metric is a registered detector on a named probe set, reduced to one
``(L, H)`` value per head. ``headlab track``, the head monitor of a training run, ``headlab induce`` and the
viewer all score probes here, through the census engine (which binds every detector to the model).

Probe sets are lists of :class:`~headlab.corpus.Sample`: ``natural`` (real text windows), ``slash`` (the
constructed `/` stimuli), ``repeat`` (random tokens repeated twice, the standard induction probe).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np
import torch

from headlab.census.engine import score_samples
from headlab.corpus import Sample
from headlab.detectors import Detector, make
from headlab.errors import HeadlabError

#: one engine batch of probe samples (probe sets are small; a fixed size keeps their scores reproducible)
PROBE_BATCH = 16


@dataclass(frozen=True)
class Metric:
    """``name``: the mean of ``detector`` over the probe set ``probe``; detectors with columns (offset, one per
    Δ) reduce to the best column (``best``) or its index (``best_index``)."""

    name: str
    detector: str
    probe: str
    reduce: Literal["mean", "best", "best_index"] = "mean"


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("slash_mass", "token", "natural"),
    Metric("slash_mass_stimuli", "token", "slash"),
    Metric("offset", "offset", "natural", "best"),
    Metric("offset_delta", "offset", "natural", "best_index"),
    Metric("previous-token", "previous-token", "natural"),
    Metric("induction", "induction", "repeat"),
    Metric("sink", "sink", "natural"),
    Metric("entropy", "entropy", "natural"),
)}


def sample_scores(loaded: Any, detectors: Sequence[Detector], samples: Sequence[Sample]) -> dict[str, np.ndarray]:
    """Every detector's per-sample scores ``(N, L, H[, C])``, samples in their given order."""
    parts: dict[str, list[np.ndarray]] = {}
    with torch.inference_mode():
        for _, scores in score_samples(loaded, detectors, samples, batch_size=PROBE_BATCH):
            for name, a in scores.items():
                parts.setdefault(name, []).append(a)
    return {k: np.concatenate(v) for k, v in parts.items()}


def mean_scores(loaded: Any, detectors: Sequence[Detector], samples: Sequence[Sample]) -> dict[str, np.ndarray]:
    """Each detector's per-head score averaged over ``samples`` (undefined samples left out; NaN where a head has
    no scored sample)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN head stays NaN
        return {k: np.nanmean(a, axis=0) for k, a in sample_scores(loaded, detectors, samples).items()}


def score_probes(loaded: Any, probes: dict[str, list[Sample]], metrics: Sequence[str]) -> dict[str, np.ndarray]:
    """``(L, H)`` per metric of :data:`METRICS`: each probe set goes through the engine once, with every detector
    its metrics need; a metric whose probe set is empty is NaN."""
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise HeadlabError(f"unknown probe metric {unknown[0]!r}; known: {', '.join(METRICS)}")
    shape = (loaded.facts.n_layers, loaded.facts.n_heads)
    means: dict[str, dict[str, np.ndarray]] = {}
    for probe in dict.fromkeys(METRICS[m].probe for m in metrics):
        dets = sorted({METRICS[m].detector for m in metrics if METRICS[m].probe == probe})
        means[probe] = mean_scores(loaded, [make(d) for d in dets], probes[probe]) if probes.get(probe) else {}
    return {m: _reduced(METRICS[m], means[METRICS[m].probe], shape) for m in metrics}


def _reduced(metric: Metric, means: dict[str, np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    a = means.get(metric.detector)
    if a is None:
        return np.full(shape, np.nan)
    if metric.reduce == "mean":
        return a
    filled = np.nan_to_num(a, nan=-np.inf)
    best = np.where(np.isfinite(filled).any(-1), filled.max(-1), np.nan)
    return best if metric.reduce == "best" else np.where(np.isnan(best), np.nan, filled.argmax(-1).astype(float))


def rows_to_samples(ids: torch.Tensor, mask: torch.Tensor, tag: str) -> list[Sample]:
    """Padded probe windows ``(N, T)`` with their mask as samples (padding dropped)."""
    return [Sample(i, tag, 0, tuple(int(x) for x in ids[i][mask[i]].tolist())) for i in range(len(ids))]
