"""Scoring a check in bounded memory: the scan's per-sample rows become fingerprints a bucket of documents at a
time in the corpus's order (:func:`~headlab.monitor.fingerprint.ordered_fingerprints`), each bucket is scored
and appended to the row files, and only what every record needs stays: its score and flag (9 bytes a record,
for the written-back dataset and the figure), the summary's sums, and the ten highest rows."""

from __future__ import annotations

import heapq
import tempfile
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from headlab.monitor.fingerprint import ordered_fingerprints
from headlab.monitor.profile import Profile
from headlab.monitor.screening import CheckResult, RowFiles, check_rows, write_summary
from headlab.notices import say

#: rows of the highest scores that monitor.md lists
WORST = 10


@dataclass
class Verdicts:
    """Every document's score and flag by its position in the corpus (``rank``; score NaN: not scored)."""

    rank: dict[str, int]
    score: np.ndarray
    flag: np.ndarray

    @classmethod
    def empty(cls, rank: dict[str, int]) -> "Verdicts":
        size = max(rank.values(), default=-1) + 1
        return cls(rank, np.full(size, np.nan), np.zeros(size, dtype=bool))

    def get(self, doc: str) -> tuple[float, bool] | None:
        """``(score, flag)`` of ``doc``, None when it was not scored."""
        i = self.rank.get(doc)
        if i is None or np.isnan(self.score[i]):
            return None
        return float(self.score[i]), bool(self.flag[i])


def score_check(prof: Profile, path: Path, rank: dict[str, int], corpus: list[str], out: Path | None,
                scratch: Path | None, keep_rows: bool, said: list[str] | None = None, capped: bool = True
                ) -> tuple[CheckResult, list[dict[str, Any]], Verdicts]:
    """Score the per-sample rows at ``path`` against ``prof``; with ``out``, write the row files and the summary
    there. Returns the summary, the rows (only with ``keep_rows``: they grow with the records) and the verdicts.
    ``said``: what the check skipped or repaired so far (records, lines, bytes), kept in the summary; ``capped``:
    whether ``--max-samples`` limited the windows (else a document not scored gave no window at all)."""
    verdicts, kept, worst = Verdicts.empty(rank), [], []
    z_flagged = np.zeros(len(prof.features))
    files: Any = RowFiles(out, prof) if out is not None else nullcontext()
    with tempfile.TemporaryDirectory(prefix="headlab-buckets-", dir=scratch) as tmp, files as written:
        for X, docs, windows, at in ordered_fingerprints(path, prof.features, rank, Path(tmp)):
            rows, Z = check_rows(prof, X, docs, windows)
            flag = np.array([r["flag"] for r in rows], dtype=bool)
            verdicts.score[at], verdicts.flag[at] = [r["score"] for r in rows], flag
            z_flagged += Z[flag].sum(0)
            worst = heapq.nlargest(WORST, worst + rows, key=lambda r: r["score"])
            if written is not None:
                written.add(rows, Z)
            if keep_rows:
                kept += rows
    scored = ~np.isnan(verdicts.score)
    n, flagged = int(scored.sum()), int(verdicts.flag.sum())
    if n < len(rank):
        why = ("past --max-samples, or no window; 0 scores every document" if capped else
               "no window: their text has no token the model reads, e.g. only zero-width or control characters")
        say(f"{len(rank) - n} of {len(rank)} documents were not scored ({why})")
    mean_z = z_flagged / max(flagged, 1)
    top = [{"feature": prof.features[j], "mean_z": float(mean_z[j])} for j in np.argsort(-np.abs(mean_z))[:5]]
    res = CheckResult(model=prof.model, corpus=corpus, n_documents=n, n_flagged=flagged,
                      flag_rate=flagged / max(1, n), threshold=prof.threshold, fpr=prof.fpr, top_features=top,
                      notices=list(said or []), reference_flag_rate=prof.calibration_flag_rate,
                      most_flagged=[{"doc": r["doc"], "score": r["score"]} for r in worst if r["flag"]])
    if out is not None:
        write_summary(out, res, worst, prof, verdicts.score[scored])
    return res, kept, verdicts
