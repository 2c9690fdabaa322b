"""The statistics of the monitor evaluation: AUROC with bootstrap intervals, a label-free combination of two
detectors, the per-kind row and its table."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from headlab.census.stats import auc, aucs
from headlab.errors import HeadlabError
from headlab.io import write_text_atomic
from headlab.monitor.baselines import DROPS_AT
from headlab.result import Result
from headlab.rulebook import BOOK
from headlab.rulebook.slash import judge_kinds, kind_stats


def _draws(n: int, m: int, rng: np.random.Generator, n_boot: int) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap indices (n_boot, n) and (n_boot, m), negatives and positives drawn apart, alternately."""
    pairs = [(rng.integers(0, n, n), rng.integers(0, m, m)) for _ in range(n_boot)]
    return np.stack([i for i, _ in pairs]), np.stack([j for _, j in pairs])


def auroc(neg: np.ndarray, pos: np.ndarray, rng: np.random.Generator, n_boot: int = 500) -> list[float]:
    """[AUROC, 2.5%, 97.5%]: percentile bootstrap over documents, negatives and positives drawn apart."""
    neg, pos = np.asarray(neg, dtype=np.float64), np.asarray(pos, dtype=np.float64)
    i, j = _draws(len(neg), len(pos), rng, n_boot)
    lo, hi = np.percentile(aucs(neg[i], pos[j]), [2.5, 97.5])
    return [auc(neg, pos), float(lo), float(hi)]


def auroc_gain(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], rng: np.random.Generator,
               n_boot: int = 500) -> list[float]:
    """[AUROC(a) - AUROC(b), 2.5%, 97.5%] for two detectors' (negative, positive) scores of the same documents:
    a paired bootstrap (one draw of documents for both), so what they share does not widen the interval."""
    (na, pa), (nb, pb) = ((np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)) for x, y in (a, b))
    i, j = _draws(len(na), len(pa), rng, n_boot)
    lo, hi = np.percentile(aucs(na[i], pa[j]) - aucs(nb[i], pb[j]), [2.5, 97.5])
    return [auc(na, pa) - auc(nb, pb), float(lo), float(hi)]


def pvalues(calibration: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The upper-tail p-value of each score among the calibration scores, (1 + #{cal >= s}) / (n + 1)."""
    cal = np.sort(np.asarray(calibration, dtype=np.float64))
    above = len(cal) - np.searchsorted(cal, scores, side="left")
    return (1.0 + above) / (len(cal) + 1.0)


def fisher(calibrations: list[np.ndarray], scores: list[np.ndarray]) -> np.ndarray:
    """Fisher's combination, -sum log p: high when any detector finds the document rare; needs no labels."""
    return -sum(np.log(pvalues(c, s)) for c, s in zip(calibrations, scores))


def rarity(calibration: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """-log of each score's upper-tail p-value among the calibration scores, continued past the largest of them
    by the distance beyond it in units of the calibration's upper tail (its maximum less its 90th percentile): a
    record rarer than every calibration document still ranks by how far out it is, where its p-value alone ties
    at the floor 1/(n + 1) with every other such record (on minilm-l6 that tie cost the combination up to 0.007
    AUROC on kinds every single signal separates)."""
    cal, s = np.asarray(calibration, dtype=np.float64), np.asarray(scores, dtype=np.float64)
    top = cal.max()
    tail = top - np.quantile(cal, 0.9)
    return -np.log(pvalues(cal, s)) + np.clip((s - top) / (tail if tail > 0 else 1.0), 0.0, None)


def rarest(calibrations: list[np.ndarray], scores: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Every signal combined as Tippett's method combines p-values, by the rarest: each document's largest
    :func:`rarity`, and which signal gives it (an index into the lists), the one that flags it. Needs no labels
    and no choice of signal."""
    r = np.stack([rarity(c, s) for c, s in zip(calibrations, scores)])  # (signals, documents)
    return r.max(0), r.argmax(0)


def every_signal(scorers: dict[str, Any], neg: dict[str, np.ndarray], pos: dict[str, np.ndarray],
                 signals: list[str], fpr: float, rng: np.random.Generator) -> dict[str, Any]:
    """The every-signal score of one kind (:func:`rarest` over ``signals``): its AUROC, its paired gain over
    each signal alone, the share of the kind's documents it flags (above the fresh reference documents' ``1 -
    fpr`` quantile of the same score: no labels) and which signal flags them (shares of those flagged)."""
    cal = [np.asarray(scorers[m].calibration_scores) for m in signals]
    (sn, _), (sp, who) = rarest(cal, [neg[m] for m in signals]), rarest(cal, [pos[m] for m in signals])
    flagged = sp > np.quantile(sn, 1.0 - fpr)
    return {"signals": signals, "auroc": auroc(sn, sp, rng),
            "gain_over": {m: auroc_gain((sn, sp), (neg[m], pos[m]), rng) for m in signals},
            "flagged": float(flagged.mean()),
            "flagged_by": {m: float((who[flagged] == i).mean()) if flagged.any() else 0.0
                           for i, m in enumerate(signals)}}


def kind_row(scorers: dict[str, Any], neg: dict[str, np.ndarray], pos: dict[str, np.ndarray],
             baseline_names: list[str], fpr: float, rng: np.random.Generator,
             every_rng: np.random.Generator) -> dict[str, Any]:
    """One kind's row: each detector's AUROC against the fresh reference documents, the heads against the best
    baseline (the verdict's statistics), the heads and that baseline combined, and the every-signal score
    (bootstrapped with ``every_rng``, so the rows' other intervals are drawn as they were before it)."""
    result = {m: auroc(neg[m], pos[m], rng) for m in pos}
    recall = {m: float((pos[m] > scorers[m].threshold).mean()) for m in pos}
    best = max(baseline_names, key=lambda m: result[m][0])
    paired = auroc_gain((neg["heads"], pos["heads"]), (neg[best], pos[best]), rng)
    cal = [np.asarray(scorers[m].calibration_scores) for m in ("heads", best)]
    both = (fisher(cal, [neg["heads"], neg[best]]), fisher(cal, [pos["heads"], pos[best]]))
    gain = auroc_gain(both, (neg[best], pos[best]), rng)
    row = {"documents": len(pos["heads"]), "auroc": result, "recall_at_fpr": recall, "best_baseline": best,
           "heads_vs_best": paired, "verdict": "", "combined": auroc(*both, rng), "gain_over_best": gain,
           "heads_add_information": gain[1] > 0,
           "every_signal": every_signal(scorers, neg, pos, ["heads", *baseline_names], fpr, every_rng),
           "dropped": {m: float((pos[m] >= DROPS_AT[m]).mean()) for m in DROPS_AT if m in pos}}
    return row


def judge_kinds_of(table: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every kind's row with its verdict by the rule book's ``monitor.kind``, from the AUROCs each row keeps, its
    heads-better verdicts corrected over the table's kinds (:func:`headlab.rulebook.slash.judge_kinds`)."""
    judged = judge_kinds({k: kind_stats(row) for k, row in table.items()})
    return {k: {**row, "verdict": ("exploratory · " if judged[k].exploratory else "") + judged[k].reason}
            for k, row in table.items()}


def _cell(a: list[float]) -> str:
    return f"{a[0]:.2f} [{a[1]:.2f}, {a[2]:.2f}]"


def _every_cells(v: dict[str, Any]) -> str:
    """The every-signal score's AUROC, its gain over the kind's best baseline and the signals that flag the
    kind's documents (shares of those flagged); dashes for an evaluation written before it was recorded."""
    e = v.get("every_signal")
    if e is None:
        return "- | - | -"
    g = e["gain_over"][v["best_baseline"]]
    by = ", ".join(f"{m} {x:.2f}" for m, x in sorted(e["flagged_by"].items(), key=lambda kv: -kv[1]) if x >= 0.05)
    return f"{_cell(e['auroc'])} | {g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}] | {by or '-'} ({e['flagged']:.2f} flagged)"


def markdown(r: dict[str, Any]) -> str:
    at = f"{100 * r['fpr']:.0f}% FPR"
    methods = ["heads", "heads-forest", *r["baselines"]]
    drops = [m for m in DROPS_AT if m in r["baselines"]]
    head = " | ".join(f"{m} AUROC [95%]" for m in methods)
    lines = [f"| kind | documents | {head} | heads + best [95%] | gain over best [95%] | every signal [95%] | "
             f"every signal - best [95%] | flagged by | recall @ {at} (heads / best) | dropped by "
             f"{' / '.join(drops)} | verdict: heads vs best baseline |",
             "|---|---|" + "---|" * len(methods) + "---|---|---|---|---|---|---|---|"]
    for kind, v in r["kinds"].items():
        cells = " | ".join(_cell(v["auroc"][m]) for m in methods)
        recall = f"{v['recall_at_fpr']['heads']:.2f} / {v['recall_at_fpr'][v['best_baseline']]:.2f}"
        dropped = " / ".join(f"{v['dropped'][m]:.2f}" for m in drops)
        g = v["gain_over_best"]
        gain = f"{g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}]" + (" adds" if v["heads_add_information"] else "")
        lines.append(f"| {kind} | {v['documents']} | {cells} | {_cell(v['combined'])} | {gain} | "
                     f"{_every_cells(v)} | {recall} | {dropped} | {v['verdict']} ({v['best_baseline']}) |")
    c = r["calibration"]
    fresh = ", ".join(f"{m} {100 * x:.1f}%" for m, x in r["fresh_dropped"].items())
    lines += ["", f"Calibration on {r['fresh_documents']} fresh reference documents: at the {at} target "
              f"{100 * c['flag_rate_at_fpr']:.1f}% flagged [{100 * c['interval_at_fpr'][0]:.1f}, "
              f"{100 * c['interval_at_fpr'][1]:.1f}] (Wilson 95%); within [0.5%, 2%]: {c['within_band']}. "
              f"The same fresh documents dropped by the published rules: {fresh}."]
    return "\n".join(lines) + "\n"


def _share_interval(v: Any) -> bool:
    """Whether ``v`` is a share, or a share with its interval ``[point, low, high]``, in [0, 1], low <= point <= high
    (None or NaN stand for undefined)."""
    x = np.asarray([np.nan if e is None else e for e in v], dtype=float)
    x = x[~np.isnan(x)]
    ok = bool(((x >= 0) & (x <= 1)).all())
    return ok and (len(v) != 3 or None in v or np.isnan(np.asarray(v, dtype=float)).any()
                   or v[1] - 1e-12 <= v[0] <= v[2] + 1e-12)


@dataclass
class EvaluationResult(Result):
    """``evaluate.json`` of ``headlab monitor evaluate``: the reference profile (``model``, ``reference``,
    ``fpr``, ``features``, ``detectors`` and its document counts), the ``calibration`` check, the attention-free
    ``baselines``, the share of fresh documents each document rule drops, and per kind the AUROCs and verdict;
    ``evaluate.md`` beside it."""

    KIND: ClassVar[str] = "evaluate.json"
    COMPANIONS: ClassVar[tuple[str, ...]] = ("evaluate.md", "calibration.png", "scores.npz")

    model: str
    reference: list[str]
    fpr: float
    features: int
    detectors: list[str]
    reference_documents: int
    fitted_documents: int
    calibration_documents: int
    fresh_documents: int
    calibration: Any
    baselines: list[str]
    fresh_dropped: dict[str, float]
    kinds: dict[str, Any]
    dtype: str | None = None          # absent from evaluations written before it was recorded
    skipped_kinds: list[str] = field(default_factory=list)

    @classmethod
    def produced_from(cls, doc: dict[str, Any]) -> list[dict[str, Any]]:
        """One identity per kind: the model, its reference and how much of it was read, the target rate, the
        detectors, the dtype and the kind."""
        same = {k: doc.get(k) for k in ("model", "reference", "reference_documents", "fpr", "detectors", "dtype")}
        return [{**same, "kind": k} for k in doc["kinds"]]

    @classmethod
    def decode(cls, d: dict[str, Any]) -> "EvaluationResult":
        """The evaluation, refused when a number is not one an evaluation can write: an AUROC, a recall or a share
        outside [0, 1], an interval that does not hold its point (a forged file sealed again reads as it was, but
        its verdicts are judged from these numbers)."""
        for k, r in d["kinds"].items():
            shares = {f"{n} AUROC": v for n, v in r["auroc"].items()} | {"combined AUROC": r.get("combined")}
            shares |= {f"{n} recall": [v] for n, v in r.get("recall_at_fpr", {}).items()}
            for name, v in shares.items():
                if v is not None and not _share_interval(v):
                    raise HeadlabError(f"{cls.KIND}: kind {k}: the {name} {v} is not a share in [0, 1] (with its "
                                       "interval around it): not a measured evaluation; evaluate again")
        if not all(_share_interval([v]) for v in d["fresh_dropped"].values()):
            raise HeadlabError(f"{cls.KIND}: fresh_dropped {d['fresh_dropped']} holds a share outside [0, 1]")
        return super().decode(d)

    def markdown(self) -> str:
        return markdown(self.to_json())

    def verdicts(self) -> dict[str, tuple[str, str, str]]:
        """Each kind's verdict by name (``kind K on MODEL``): its rule, verdict and power statement."""
        return {f"kind {k} on {self.model}": ("monitor.kind", r["verdict"],
                                              BOOK["monitor.kind"].judge(kind_stats(r)).power)
                for k, r in self.kinds.items()}

    def rejudged(self) -> EvaluationResult:
        """The evaluation with every kind judged again by the current rule book (``headlab verdicts``)."""
        return dataclasses.replace(self, kinds=judge_kinds_of(self.kinds))

    def records(self) -> list[dict[str, Any]]:
        return [{"kind": k, **{n: v for n, v in row.items() if not isinstance(v, (list, dict))}}
                for k, row in self.kinds.items()]

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "evaluate.md", self.markdown())
