"""The head monitor: a reference profile of a model's head activity, and flags on documents that depart from it
(``headlab monitor fit`` / ``check``). Fingerprints: :mod:`.fingerprint`; the profile: :mod:`.profile`;
checking and explaining: :mod:`.check`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .check import CheckResult, check_rows, write
from .fingerprint import MONITOR_DETECTORS, choose_features, column_means, fingerprints, scanned
from .profile import Profile, fit_profile


def fit(model: Any, corpus: Sequence[str], *, max_samples: int = 2000, per_detector: int = 8, fpr: float = 0.01,
        seed: int = 0, batch_size: int = 8, max_length: int = 128, progress: bool = True,
        device: str = "cpu") -> Profile:
    """Scan the reference corpus, choose the features, fit and calibrate the profile."""
    with scanned(model, corpus, max_samples, seed, batch_size, max_length, progress, device) as (path, r):
        features = choose_features(column_means(path), per_detector)
        X, docs, _ = fingerprints(path, features)
    return fit_profile(X, docs, features, fpr, model=r.model, corpus=list(corpus),
                       settings={"max_samples": max_samples, "per_detector": per_detector, "seed": seed,
                                 "batch_size": batch_size, "max_length": max_length,
                                 "detectors": list(MONITOR_DETECTORS), "n_reference_samples": r.n_samples})


def check(profile: Profile | str | Path, corpus: Sequence[str], out: str | Path | None = None, *,
          model: Any = None, max_samples: int = 2000, seed: int = 0, batch_size: int = 8, progress: bool = True,
          device: str = "cpu") -> tuple[CheckResult, list[dict[str, Any]]]:
    """Score every document of ``corpus`` against the profile; with ``out``, write the report there."""
    prof = profile if isinstance(profile, Profile) else Profile.read(Path(profile) / "profile.json")
    detectors = prof.settings.get("detectors", MONITOR_DETECTORS)
    with scanned(model or prof.model, corpus, max_samples, seed, batch_size, prof.settings["max_length"], progress,
                 device, detectors) as (path, _):
        X, docs, windows = fingerprints(path, prof.features)
    records = check_rows(prof, X, docs, windows)
    flagged = [r for r in records if r["flag"]]
    Z = prof.z(X)
    mask = np.array([r["flag"] for r in records])
    mean_z = Z[mask].mean(0) if mask.any() else np.zeros(len(prof.features))
    top = [{"feature": prof.features[j], "mean_z": float(mean_z[j])} for j in np.argsort(-np.abs(mean_z))[:5]]
    res = CheckResult(model=prof.model, corpus=list(corpus), n_documents=len(records), n_flagged=len(flagged),
                      flag_rate=len(flagged) / max(1, len(records)), threshold=prof.threshold, fpr=prof.fpr,
                      top_features=top)
    if out is not None:
        write(Path(out), res, records, prof, prof.calibration_scores, np.array([r["score"] for r in records]), Z)
    return res, records


__all__ = ["CheckResult", "Profile", "check", "fit"]
