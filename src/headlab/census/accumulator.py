"""The census accumulator: everything a scan keeps about the samples it has seen, as sums and counts.

Means, spreads and above-θ counts are sums, so shards merge exactly by addition; the consecutive-sample SDH rule
is not (it depends on the global sample order), so it is fed the token scores of every sample in global order,
whichever process computed them. The state saves to one ``.npz`` and loads back bit for bit, which is what a
checkpoint of a resumable scan holds.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from headlab.census.result import BOUND_SLACK
from headlab.census.stats import ConsecutiveRule, RunningMoments
from headlab.corpus import Sample
from headlab.detectors import DETECTORS
from headlab.errors import HeadlabError

_MOMENT_FIELDS = ("n", "sum", "sumsq", "above")


def _check_scores(name: str, block: np.ndarray, samples: Sequence[Sample]) -> None:
    """Refused, in one line naming the detector, the layer and the sample, when a detector's scores ``(N, L, H[, C])``
    hold an infinite value or one outside the ``bounds`` it declares (NaN marks an undefined sample)."""
    lo, hi = getattr(DETECTORS.get(name), "bounds", None) or (-np.inf, np.inf)
    with np.errstate(invalid="ignore"):
        bad = np.isinf(block) | (block < lo - BOUND_SLACK) | (block > hi + BOUND_SLACK)
    if bad.any():
        n, layer = (int(x) for x in np.argwhere(bad)[0][:2])
        raise HeadlabError(f"detector {name!r} gave the score {block[tuple(np.argwhere(bad)[0])]:.6g} at layer "
                           f"{layer} on sample {samples[n].index} ({samples[n].doc_id}), outside [{lo:g}, {hi:g}]: a "
                           "score is finite, within the bounds its detector declares, or NaN where undefined")


class Census:
    """Running statistics of one scan over ``(L, H)`` heads."""

    def __init__(self, shape: tuple[int, int], threshold: float, consecutive: int):
        self.shape, self.threshold = shape, threshold
        self.moments: dict[str, RunningMoments] = {}
        self.rule = ConsecutiveRule(shape, threshold, consecutive)
        self.n_samples = self.n_tokens = self.n_with = 0
        self.position = 0  # samples of the global stream consumed so far (resume point)

    def add_scores(self, samples: Sequence[Sample], scores: dict[str, np.ndarray]) -> None:
        """This process's share: the moments of ``scores`` (one row per sample) and the sample counts."""
        for name, block in scores.items():
            _check_scores(name, block, samples)
            if name not in self.moments:
                self.moments[name] = RunningMoments(block.shape[1:], self.threshold if name == "token" else None)
            self.moments[name].update(block)
        self.n_samples += len(samples)
        self.n_tokens += sum(len(s.input_ids) for s in samples)

    def ensure(self, name: str, shape: tuple[int, ...]) -> None:
        """Statistics for detector ``name`` even before this process has seen a sample of it (shards align)."""
        if name not in self.moments:
            self.moments[name] = RunningMoments(shape, self.threshold if name == "token" else None)

    def add_rule(self, token: np.ndarray) -> None:
        """Token scores ``(N, L, H)`` of consecutive samples in global order: the SDH rule and the target count."""
        self.rule.update(token)
        self.n_with += int((~np.isnan(token[:, 0, 0])).sum())

    # --- persistence -----------------------------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {
            "counts": np.array([self.n_samples, self.n_tokens, self.n_with, self.position], dtype=np.int64),
            "rule.run": self.rule.run, "rule.best": self.rule.best,
        }
        for name, m in self.moments.items():
            for f in _MOMENT_FIELDS:
                out[f"moments.{name}.{f}"] = getattr(m, f)
        return out

    def load(self, state: dict[str, np.ndarray]) -> None:
        self.n_samples, self.n_tokens, self.n_with, self.position = (int(x) for x in state["counts"])
        self.rule.run, self.rule.best = state["rule.run"].copy(), state["rule.best"].copy()
        self.moments = {}
        for key in state:
            if key.startswith("moments.") and key.endswith(".n"):
                name = key[len("moments."):-len(".n")]
                m = RunningMoments(state[key].shape, self.threshold if name == "token" else None)
                for f in _MOMENT_FIELDS:
                    setattr(m, f, state[f"moments.{name}.{f}"].copy())
                self.moments[name] = m

    # --- shards ----------------------------------------------------------------------------------------------
    def sums(self, names: Sequence[str]) -> tuple[list[np.ndarray], Any]:
        """The additive parts, in a fixed order (for an all-reduce), and a function that puts merged ones back."""
        arrays = [np.array([self.n_samples, self.n_tokens], dtype=np.int64)]
        arrays += [getattr(self.moments[n], f) for n in names for f in _MOMENT_FIELDS]

        def put(merged: list[np.ndarray]) -> None:
            self.n_samples, self.n_tokens = (int(x) for x in merged[0])
            it = iter(merged[1:])
            for n in names:
                for f in _MOMENT_FIELDS:
                    setattr(self.moments[n], f, next(it))
        return arrays, put

    def zeroed(self) -> None:
        """Forget the additive parts (another shard carries them), keeping the rule and the position."""
        for m in self.moments.values():
            for f in _MOMENT_FIELDS:
                setattr(m, f, np.zeros_like(getattr(m, f)))
        self.n_samples = self.n_tokens = 0
