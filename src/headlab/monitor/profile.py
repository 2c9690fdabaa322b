"""The reference profile of a model's head activity (``headlab monitor fit``), and scoring new documents with it.

Features are robust z-scores against the reference: ``z = (x − median) / (1.4826 · MAD)``; a feature that is
mostly one value in the reference (MAD 0: the mass on `/` of text that rarely has one) is scaled by its standard
deviation instead, never by less than :data:`SPREAD_FLOOR`; a feature that does not vary at all in the fitted
reference is dropped (the profile lists it in ``settings.dropped_features``). A document's anomaly score
is the Mahalanobis distance of its z-vector under a Ledoit-Wolf shrinkage covariance fitted on the reference
documents (scikit-learn): the heads move together, and shrinkage keeps the inverse stable with few documents per
feature. The flag threshold is the ``1 − fpr`` quantile of the scores of held-out reference documents (every
fifth document by a hash of its id), so about ``fpr`` of fresh reference documents are flagged.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from headlab.errors import HeadlabError
from headlab.result import Result

#: the least spread a feature is measured against. Features are attention masses and shares in [0, 1] (and
#: entropies in nats): a hundredth is below any difference a reader would call a change in a head's behaviour
#: and above the jitter of a document's mean over windows, so a feature that barely varies in the reference
#: cannot turn a trace of change into a z of thousands
SPREAD_FLOOR = 0.01


def fold(doc: str) -> int:
    """A document's fold 0-4, by a hash of its id (stable across runs and processes)."""
    return int(hashlib.sha256(doc.encode()).hexdigest(), 16) % 5


def held_out(doc: str) -> bool:
    """Fold 0, every fifth document, calibrates the threshold."""
    return fold(doc) == 0


def _check_calibration(prof: "Profile") -> None:
    """A profile's threshold and calibration line are what its own held-out scores give (the threshold their
    ``1 − fpr`` quantile, the flag rate their share above it): an edited threshold would flag at another rate while
    the check still printed the profile's calibration line."""
    scores = np.asarray(prof.calibration_scores, dtype=np.float64)
    if not len(scores) or not np.isfinite(scores).all():
        raise ValueError("calibration_scores are empty or not finite numbers; fit the profile again")
    q = float(np.quantile(scores, 1.0 - prof.fpr))
    if not np.isclose(prof.threshold, q, rtol=1e-9, atol=1e-12):
        raise ValueError(f"threshold {prof.threshold!r} is not the {1 - prof.fpr:.0%} quantile of the profile's own "
                         f"calibration scores ({q:.6g}): the profile was edited; fit it again")
    rate = float((scores > prof.threshold).mean())
    if not np.isclose(prof.calibration_flag_rate, rate, rtol=1e-9, atol=1e-12):
        raise ValueError(f"calibration_flag_rate {prof.calibration_flag_rate!r} is not the share of the profile's "
                         f"calibration scores above its threshold ({rate:.6g}): the profile was edited; fit it again")


@dataclass
class Profile(Result):
    """``profile.json``: what ``monitor check`` needs, and how the profile was made."""

    KIND = "profile.json"
    model: str
    corpus: list[str]
    features: list[str]
    median: list[float]
    scale: list[float]
    covariance: list[list[float]]
    threshold: float
    fpr: float
    n_fit: int
    n_calibration: int
    calibration_flag_rate: float
    calibration_scores: list[float]
    settings: dict[str, Any]
    #: :attr:`~headlab.models.LoadedModel.identity` of the fitted model: ``check`` refuses any other (absent in
    #: profiles fitted before it was recorded, which are checked without it, with a notice)
    model_identity: str | None = None

    @classmethod
    def decode(cls, d: dict[str, Any]) -> "Profile":
        prof = super().decode(d)
        for name in ("threshold", "fpr"):
            value = getattr(prof, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ValueError(f"{name} is {value!r}, not a number")
        n = len(prof.features)
        if len(prof.median) != n or len(prof.scale) != n or any(len(row) != n for row in prof.covariance):
            raise ValueError(f"{n} features but medians, scales or covariance of other sizes")
        _check_calibration(prof)
        return prof

    def summary(self) -> str:
        return (f"profile of {self.model} on {', '.join(self.corpus)}: {len(self.features)} features, "
                f"{self.n_fit} documents fitted, {self.n_calibration} held out; threshold {self.threshold:.2f} "
                f"flags {100 * self.calibration_flag_rate:.1f}% of the held-out reference (target "
                f"{100 * self.fpr:.0f}%)")

    def markdown(self) -> str:
        return self.summary() + "\n"

    def z(self, X: np.ndarray) -> np.ndarray:
        return (self._kept(X) - np.asarray(self.median)) / np.asarray(self.scale)

    def _kept(self, X: np.ndarray) -> np.ndarray:
        """A matrix of the fit's input columns, reduced to the features kept (those of no spread are dropped)."""
        given = self.settings.get("input_features")
        if given is None or X.shape[1] == len(self.features) or X.shape[1] != len(given):
            return X
        index = {f: i for i, f in enumerate(given)}
        return X[:, [index[f] for f in self.features]]

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Mahalanobis distance of each row's z-vector under the reference covariance."""
        Z = self.z(X)
        prec = np.linalg.pinv(np.asarray(self.covariance))
        return np.sqrt(np.einsum("nf,fg,ng->n", Z, prec, Z).clip(min=0.0))


def fit_profile(X: np.ndarray, docs: list[str], features: list[str], fpr: float,
                exclude: np.ndarray | None = None, **meta: Any) -> Profile:
    """A profile from reference fingerprints ``X`` (documents x features); rows where ``exclude`` is true are
    neither fitted nor calibrated on (the evaluation keeps them as fresh reference documents)."""
    # deferred: scikit-learn takes ~0.5 s to import and only this analysis needs it
    from sklearn.covariance import LedoitWolf

    if exclude is not None:
        X, docs = X[~exclude], [d for d, e in zip(docs, exclude) if not e]
    cal = np.array([held_out(d) for d in docs], dtype=bool)
    flat = np.ptp(X[~cal], axis=0) == 0 if (~cal).any() else np.zeros(X.shape[1], dtype=bool)
    meta["settings"] = {**meta.get("settings", {}), "input_features": list(features),
                        "dropped_features": [f for f, c in zip(features, flat) if c]}  # no spread: no z to give
    X, features = X[:, ~flat], [f for f, c in zip(features, flat) if not c]
    if not features:
        raise HeadlabError("no head feature varies over the reference documents; fit on a larger or more varied "
                           "--corpus")
    if cal.sum() < 10 or (~cal).sum() < 20:
        raise HeadlabError(f"the reference has {len(docs)} documents ({int(cal.sum())} held out): too few to "
                           "calibrate; use more --max-samples or a larger corpus")
    fit = X[~cal]
    med = np.median(fit, 0)
    mad = 1.4826 * np.median(np.abs(fit - med), 0)
    sd = fit.std(0)
    scale = np.maximum(np.where(mad > 0, mad, sd), SPREAD_FLOOR)
    cov = LedoitWolf().fit((fit - med) / scale).covariance_
    prof = Profile(features=list(features), median=med.tolist(), scale=scale.tolist(), covariance=cov.tolist(),
                   threshold=0.0, fpr=fpr, n_fit=int((~cal).sum()), n_calibration=int(cal.sum()),
                   calibration_flag_rate=0.0, calibration_scores=[], **meta)
    cal_scores = prof.scores(X[cal])
    prof.threshold = float(np.quantile(cal_scores, 1.0 - fpr))
    prof.calibration_flag_rate = float((cal_scores > prof.threshold).mean())
    prof.calibration_scores = [float(x) for x in cal_scores]
    return prof


class ForestScorer:
    """The alternative the evaluation weighs the profile against: an isolation forest (scikit-learn, 200 trees,
    seeded) on the same robust z-scores, its anomaly score ``-decision_function``, its threshold calibrated on the
    same held-out documents. Not stored in profiles: the evaluation reports both (docs/monitor.md says which
    did better and why the profile uses the distance)."""

    def __init__(self, prof: Profile, X: np.ndarray, docs: list[str], exclude: np.ndarray, seed: int):
        # deferred: scikit-learn takes ~0.5 s to import and only this analysis needs it
        from sklearn.ensemble import IsolationForest

        keep = ~exclude
        X, docs = X[keep], [d for d, k in zip(docs, keep) if k]
        cal = np.array([held_out(d) for d in docs], dtype=bool)
        self.prof = prof
        self.forest = IsolationForest(n_estimators=200, random_state=seed).fit(prof.z(X[~cal]))
        self.calibration_scores = self.scores(X[cal])
        self.threshold = float(np.quantile(self.calibration_scores, 1.0 - prof.fpr))

    def scores(self, X: np.ndarray) -> np.ndarray:
        return -self.forest.decision_function(self.prof.z(X))
