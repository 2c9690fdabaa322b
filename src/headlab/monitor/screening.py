"""Checking new documents against a profile (``headlab monitor check``): a score, a flag, and the heads that
deviate most, in words a data engineer can act on."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from headlab.detectors import DETECTORS
from headlab.errors import naming
from headlab.io import write_text_atomic
from headlab.monitor.profile import Profile
from headlab.plotting import pyplot, save_figure
from headlab.result import Result


def explain(feature: str, z: float) -> str:
    """A flagged feature in words: what the head's score measures and, when it is high, what the detector says
    that suggests about the text (each detector declares both: ``Detector.meaning`` and ``Detector.hint``)."""
    det, head = feature.split("/", 1)
    cls = DETECTORS.get(det)
    what, hint = (cls.meaning or det, cls.hint) if cls is not None else (det, "unusual structure")
    side = "above" if z > 0 else "below"
    return f"head {head}'s {what} is {abs(z):.1f} spreads {side} reference (robust z)" + (f": {hint}" if z > 0 else "")


@dataclass
class CheckResult(Result):
    """``check.json``: the summary of a check; per-document rows are in ``monitor.jsonl``."""

    KIND = "check.json"
    COMPANIONS: ClassVar[tuple[str, ...]] = ("monitor.jsonl", "monitor.parquet", "monitor.md", "scores.png")
    model: str
    corpus: list[str]
    n_documents: int
    n_flagged: int
    flag_rate: float
    threshold: float
    fpr: float
    top_features: list[dict[str, Any]]
    notices: list[str] = field(default_factory=list)  # what the check skipped or repaired, as said on stderr
    # measured when the profile was fitted: the share of its held-out reference documents the threshold flags
    # (absent from checks written before it was recorded)
    reference_flag_rate: float | None = None
    most_flagged: list[dict[str, Any]] = field(default_factory=list)  # the highest-scoring flagged documents

    def reference_rate(self) -> str:
        """The false-alarm rate said one way everywhere: measured on the held-out reference, beside the target."""
        if self.reference_flag_rate is None:
            return f"the profile's threshold {self.threshold:.2f} targets {100 * self.fpr:.0f}% of reference documents"
        return (f"the profile's threshold {self.threshold:.2f} flags {100 * self.reference_flag_rate:.1f}% of "
                f"held-out reference documents (target {100 * self.fpr:.0f}%)")

    def markdown(self) -> str:
        lines = [f"**{self.n_flagged} of {self.n_documents}** documents of {', '.join(self.corpus)} flagged "
                 f"({100 * self.flag_rate:.1f}%; {self.reference_rate()})", "",
                 "| feature | mean robust z over the flagged documents |", "|---|---|"]
        lines += [f"| {t['feature']} | {t['mean_z']:+.1f} |" for t in self.top_features]
        return "\n".join(lines + notice_lines(self.notices)) + "\n"



def check_rows(prof: Profile, X: np.ndarray, docs: list[str], windows: np.ndarray,
               top: int = 3) -> tuple[list[dict], np.ndarray]:
    """One record per document: score, flag, its most deviating features (signed robust z) explained; and the
    robust z-scores ``(documents, features)``."""
    scores, Z = prof.scores(X), prof.z(X)
    out = []
    for i, doc in enumerate(docs):
        order = np.argsort(-np.abs(Z[i]))[:top]
        out.append({"doc": doc, "windows": int(windows[i]), "score": float(scores[i]),
                    "flag": bool(scores[i] > prof.threshold),
                    "deviations": [{"feature": prof.features[j], "z": float(Z[i, j]),
                                    "explanation": explain(prof.features[j], float(Z[i, j]))} for j in order]})
    return out, Z


def notice_lines(notices: list[str]) -> list[str]:
    """What a check skipped or repaired (as said on stderr), as Markdown lines; none when it skipped nothing."""
    return ["", "Skipped or repaired (also said on stderr):", "", *(f"- {n}" for n in notices)] if notices else []


def markdown(res: CheckResult, worst: list[dict], figure: str) -> str:
    """``monitor.md``; ``worst``: the rows of the highest scores, highest first."""
    lines = [f"# Head monitor: {res.model} on {', '.join(res.corpus)}", "",
             f"{res.n_flagged} of {res.n_documents} documents flagged ({100 * res.flag_rate:.1f}%; "
             f"{res.reference_rate()}).", "",
             f"![scores]({figure})", "", "Features that deviate most across the flagged documents (mean signed z):",
             ""]
    lines += [f"- `{t['feature']}` {t['mean_z']:+.1f}: {explain(t['feature'], t['mean_z'])}" for t in res.top_features]
    lines += ["", "Most anomalous documents:", "", "| document | score | why |", "|---|---|---|"]
    for r in worst:
        lines.append(f"| {r['doc']} | {r['score']:.1f}{' (flag)' if r['flag'] else ''} | "
                     f"{r['deviations'][0]['explanation']} |")
    return "\n".join(lines + notice_lines(res.notices)) + "\n"


def plot(prof: Profile, ref_scores: list[float], scores: np.ndarray, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    bins = np.linspace(0, max(np.max(scores), max(ref_scores or [1.0]), prof.threshold) * 1.05, 40)
    if ref_scores:
        ax.hist(ref_scores, bins=bins, alpha=0.6, density=True, label="reference (held out)")
    ax.hist(scores, bins=bins, alpha=0.6, density=True, label="checked")
    ax.axvline(prof.threshold, color="k", ls="--", lw=1, label=f"threshold ({100 * prof.fpr:.0f}% FPR)")
    ax.set_xlabel("anomaly score (Mahalanobis distance of head z-scores)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


class RowFiles:
    """``monitor.jsonl`` (one row per document) and ``monitor.parquet`` (per document its windows, score, flag and
    the signed robust z of every feature), appended a bucket of rows at a time under temporary names that
    :meth:`close` gives their own: no file is built in memory, and an interrupted check leaves none half-written."""

    def __init__(self, out: Path, prof: Profile):
        # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.paths = [out / "monitor.jsonl", out / "monitor.parquet"]
        self.tmps = [p.with_name(p.name + ".tmp") for p in self.paths]
        self.schema = pa.schema([("doc", pa.string()), ("windows", pa.int64()), ("score", pa.float64()),
                                 ("flag", pa.bool_())] + [(f"z/{f}", pa.float32()) for f in prof.features])
        self.jsonl = self.tmps[0].open("w")
        self.table = pq.ParquetWriter(self.tmps[1], self.schema)

    def add(self, rows: list[dict], Z: np.ndarray) -> None:
        # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
        import pyarrow as pa

        with naming(self.paths[0]):
            self.jsonl.write("".join(json.dumps(r) + "\n" for r in rows))
        cols = [[r[k] for r in rows] for k in ("doc", "windows", "score", "flag")]
        cols += list(np.ascontiguousarray(Z.astype(np.float32).T))
        with naming(self.paths[1]):
            self.table.write_table(pa.Table.from_arrays([pa.array(c) for c in cols], schema=self.schema))

    def __enter__(self) -> "RowFiles":
        return self

    def __exit__(self, kind: Any, *_: Any) -> None:
        try:
            with naming(self.paths[0]):
                self.jsonl.close()
            with naming(self.paths[1]):
                self.table.close()
        except OSError:  # the last buffer did not fit (a full disk): no half-written rows are kept
            kind = OSError
            raise
        finally:
            for tmp, path in zip(self.tmps, self.paths):
                if kind is None:
                    tmp.replace(path)
                else:
                    tmp.unlink(missing_ok=True)


def write_summary(out: Path, res: CheckResult, worst: list[dict], prof: Profile, scores: np.ndarray) -> None:
    """``check.json``, ``scores.png`` (the checked scores beside the held-out reference's) and ``monitor.md``."""
    res.write(out)
    plot(prof, prof.calibration_scores, scores, out / "scores.png")
    write_text_atomic(out / "monitor.md", markdown(res, worst, "scores.png"))
