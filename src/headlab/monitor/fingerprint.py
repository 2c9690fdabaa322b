"""Document fingerprints: per-sample head scores from a scan (``--per-sample``), averaged over each document's
windows, for a chosen set of ``DETECTOR/L.H`` features.

A score that is undefined in a window (the token detector's mass on a target the window lacks) counts as 0: the
window gives that target no attention. A document is one row; its windows are all the scan drew from it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import HeadlabError


def scan_rows(model: Any, corpus: Sequence[str], max_samples: int, seed: int, batch_size: int, max_length: int,
              progress: bool, device: str) -> Any:
    """A per-sample scan of ``corpus`` as a pandas DataFrame (and the scan result, for feature choice)."""
    import pandas as pd

    from ..scan import scan

    with tempfile.TemporaryDirectory(prefix="headlab-monitor-") as tmp:
        rows = Path(tmp) / "rows.parquet"
        r = scan(model, corpus=list(corpus), max_samples=max_samples, seed=seed, batch_size=batch_size,
                 max_length=max_length, progress=progress, device=device, per_sample=rows)
        if r.interrupted:
            raise KeyboardInterrupt("interrupted while scanning the corpus")
        return pd.read_parquet(rows), r


def fingerprints(rows: Any, features: Sequence[str]) -> tuple[np.ndarray, list[str], np.ndarray]:
    """``(documents, features)`` means over each document's windows, the document ids, windows per document."""
    missing = [f for f in features if f not in rows.columns]
    if missing:
        raise HeadlabError(f"the scan has no column {missing[0]!r}: fit and check with the same detectors")
    grouped = rows[["doc", *features]].fillna(0.0).groupby("doc", sort=True)
    means = grouped.mean()
    return means.to_numpy(dtype=np.float64), [str(d) for d in means.index], grouped.size().to_numpy()


def choose_features(rows: Any, per_detector: int) -> list[str]:
    """The ``per_detector`` heads with the highest mean score of every detector in the reference rows."""
    cols = [c for c in rows.columns if "/" in c and not c.startswith("offset_delta/")]
    by_det: dict[str, list[str]] = {}
    for c in cols:
        by_det.setdefault(c.split("/")[0], []).append(c)
    out = []
    for _, group in sorted(by_det.items()):
        means = rows[group].fillna(0.0).mean()
        out += list(means.sort_values(ascending=False).index[:per_detector])
    return out
