"""Early prediction: from the first part of training, predict which heads end up specialized.

For each run (one seed) and head, features from the checkpoints and gradient signals at or before
``early_fraction`` of the run's steps:

* score features (the chosen metric): the last early value, the early maximum, the early slope per
  log10(step);
* gradient features: the early means of each signal of :mod:`headlab.formation.signals` (log10), and of
  log10(logit_slash / logit_other).

Label: the head's score at the final checkpoint ≥ ``threshold``. Model: L2-regularised logistic regression
(scikit-learn, standardized features). Evaluation: leave-one-seed-out — each run's heads are predicted by a model
fitted on the other runs' heads — pooled over runs: precision and recall at probability 0.5, and ROC AUC.
Baseline: the early score alone (its last early value), with a one-feature logistic fit the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np

from headlab.census.stats import auc
from headlab.formation.tracking import TrackResult
from headlab.result import Result
from headlab.rulebook.formation import NULLS
from headlab.settings import Settings, setting
from headlab.values import Rule


@dataclass
class RunData:
    name: str
    track: TrackResult
    signal_steps: list[int]
    signals: dict[str, np.ndarray]  # name -> (S, L, H)
    total_steps: int


@dataclass(frozen=True)
class PredictSettings(Settings):
    """What ``headlab predict`` predicts: which heads end with ``metric`` at or above ``threshold`` (None: the
    tracker's threshold for the metric), from the first ``early`` share of training."""

    FAMILY: ClassVar[str] = "predict"

    metric: str = setting("previous-token", "score to predict")
    threshold: float | None = setting(None, "final score that counts as specialized (default: the tracker's "
                                      "threshold for the metric)", rule=Rule("number", optional=True))
    early: float = setting(0.1, "share of training the features come from (above 0, at most 1)",
                           rule=Rule("share"))

    def more_problems(self) -> list[str]:
        number = isinstance(self.early, (int, float)) and not isinstance(self.early, bool)
        return [] if not number or self.early > 0 else [
            f"--early {self.early!r}: give a share of training above 0 and at most 1"]


#: predict given no options
PREDICT = PredictSettings()


def features(run: RunData, metric: str, early_fraction: float) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(heads, features) for the score-and-gradient model, (heads,) early score alone, and feature names."""
    t = run.track
    cut = early_fraction * run.total_steps
    idx = [i for i, s in enumerate(t.steps) if s <= cut]
    if len(idx) < 2:
        raise ValueError(f"{run.name}: fewer than 2 checkpoints in the first {early_fraction:.0%} of training")
    y = t.scores[metric][idx]  # (S_early, L, H)
    x = np.log10(np.asarray(t.steps, dtype=float)[idx])
    last, peak = y[-1], np.nanmax(y, 0)
    xc = x - x.mean()
    slope = np.tensordot(xc, np.nan_to_num(y - np.nanmean(y, 0)), axes=(0, 0)) / max((xc ** 2).sum(), 1e-12)
    cols, names = [last, peak, slope], ["early_last", "early_max", "early_slope"]
    sidx = [i for i, s in enumerate(run.signal_steps) if s <= cut]
    if sidx:
        for n, a in sorted(run.signals.items()):
            cols.append(np.log10(np.maximum(a[sidx].mean(0), 1e-12)))
            names.append(f"log_{n}")
        if "logit_slash" in run.signals and "logit_other" in run.signals:
            r = run.signals["logit_slash"][sidx].mean(0) / np.maximum(run.signals["logit_other"][sidx].mean(0), 1e-12)
            cols.append(np.log10(np.maximum(r, 1e-12)))
            names.append("log_slash_over_other")
    X = np.stack([c.ravel() for c in cols], 1)  # (L·H, F)
    return np.nan_to_num(X), np.nan_to_num(last.ravel()), names


def labels(run: RunData, metric: str, threshold: float) -> np.ndarray:
    return (np.nan_to_num(run.track.scores[metric][-1].ravel(), nan=-np.inf) >= threshold).astype(int)


Model = Any  # a fitted sklearn Pipeline (StandardScaler, LogisticRegression)
#: the predictors compared, in the order of their inputs in :func:`loso`
PREDICTORS = ("early_model", "early_score_alone", "layer_index", "score_and_layer")
# NULLS: the nulls ``formation.prediction`` declares, each a predictor the early model must beat (random: a seeded
# score); the rule owns the list


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1.0) -> Model:
    """A standardized L2 logistic regression (penalty ``l2/2 · |w|²`` on the standardized weights, none on the
    intercept: scikit-learn's ``C = 1 / l2``)."""
    # deferred: scikit-learn takes ~0.5 s to import and only this analysis needs it
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0 / l2, max_iter=1000)).fit(X, y)


def predict_proba(model: Model, X: np.ndarray) -> np.ndarray:
    return model.predict_proba(X)[:, 1]


def roc_auc(y: np.ndarray, score: np.ndarray) -> float | None:
    """Area under the ROC curve of ``score`` for the labels ``y`` (ties count half: the monitor's AUROC,
    :func:`headlab.census.stats.auc`); None when one class is absent."""
    if y.min() == y.max():
        return None
    return auc(score[y == 0], score[y == 1])


def _pr(y: np.ndarray, p: np.ndarray) -> tuple[float | None, float | None]:
    """Precision and recall at probability 0.5; None where undefined (nothing predicted, or no positive)."""
    # deferred: scikit-learn takes ~0.5 s to import and only this analysis needs it
    from sklearn.metrics import precision_score, recall_score

    pred = (p >= 0.5).astype(int)
    prec = float(precision_score(y, pred, zero_division=np.nan))
    rec = float(recall_score(y, pred, zero_division=np.nan))
    return (None if np.isnan(prec) else prec), (None if np.isnan(rec) else rec)


@dataclass
class PredictResult(Result):
    """``predict.json``: leave-one-seed-out precision, recall and ROC AUC of the early model and the baseline."""

    KIND = "predict.json"
    metric: str
    threshold: float
    early_fraction: float
    runs: list[str]
    n_heads: int
    n_positive: int
    features: list[str]
    evaluation: str
    early_model: dict[str, Any]
    early_score_alone: dict[str, Any]
    layer_index: dict[str, Any] = field(default_factory=dict)  # absent from files written before it was added
    random: dict[str, Any] = field(default_factory=dict)
    score_and_layer: dict[str, Any] = field(default_factory=dict)

    def markdown(self) -> str:
        fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
        lines = [f"**{self.metric} >= {self.threshold}** at the end, predicted from the first "
                 f"{self.early_fraction:.0%} of training: {len(self.runs)} runs, {self.n_heads} heads, "
                 f"{self.n_positive} specialized ({self.evaluation})", "",
                 "| predictor | precision | recall | ROC AUC |", "|---|---|---|---|"]
        for name in ("early_model", *NULLS):
            v = getattr(self, name)
            if v:
                lines.append(f"| {name} | {fmt(v.get('precision'))} | {fmt(v.get('recall'))} | {fmt(v['roc_auc'])} |")
        return "\n".join(lines) + "\n"


def layer_index(run: RunData, metric: str) -> np.ndarray:
    """(L·H, L) one-hot layer of every head, in the layer-major order of :func:`features`: the baseline that
    knows only where a head sits."""
    L, H = run.track.scores[metric].shape[1:3]
    return np.repeat(np.eye(L), H, axis=0)


def loso(runs: Sequence[RunData], metric: str, threshold: float, early_fraction: float
         ) -> tuple[np.ndarray, dict[str, np.ndarray], list[np.ndarray], list[str]]:
    """Leave-one-seed-out: every head's label and, per predictor, its probabilities (the early model, the
    early score alone, the layer index alone), each run predicted by models fitted on the other runs (pooled in
    run order); also each run's raw early scores and the feature names."""
    if len(runs) < 2:
        raise ValueError("early prediction needs at least 2 runs (seeds); the issue asks for 5 or more")
    data, ys = [], []
    for r in runs:
        X, base, names = features(r, metric, early_fraction)
        layer = layer_index(r, metric)
        data.append({"early_model": X, "early_score_alone": base[:, None], "layer_index": layer,
                     "score_and_layer": np.hstack([base[:, None], layer])})
        ys.append(labels(r, metric, threshold))
    probs: dict[str, list[np.ndarray]] = {k: [] for k in PREDICTORS}
    for k in range(len(runs)):
        ytr = np.concatenate([y for i, y in enumerate(ys) if i != k])
        for name in PREDICTORS:
            if ytr.min() == ytr.max():  # one class only in training: predict its rate
                probs[name].append(np.full(len(ys[k]), float(ytr[0])))
            else:
                fitted = fit_logistic(np.concatenate([d[name] for i, d in enumerate(data) if i != k]), ytr)
                probs[name].append(predict_proba(fitted, data[k][name]))
    return (np.concatenate(ys), {k: np.concatenate(v) for k, v in probs.items()},
            [d["early_score_alone"][:, 0] for d in data], names)


def early_prediction(
    runs: Sequence[RunData], metric: str, threshold: float, early_fraction: float = 0.1
) -> PredictResult:
    """Leave-one-seed-out evaluation of the early model against the early-score baseline."""
    y, probs, raw, names = loso(runs, metric, threshold, early_fraction)
    scores = {}
    for name, p in probs.items():
        prec, rec = _pr(y, p)
        scores[name] = {"precision": prec, "recall": rec, "roc_auc": roc_auc(y, p)}
    scores["early_score_alone"]["roc_auc_raw_score"] = roc_auc(y, np.concatenate(raw))
    scores["random"] = {"roc_auc": roc_auc(y, np.random.default_rng(0).random(len(y)))}
    return PredictResult(metric=metric, threshold=threshold, early_fraction=early_fraction, runs=[r.name for r in runs],
                         n_heads=int(len(y)), n_positive=int(y.sum()), features=names,
                         evaluation="leave-one-seed-out, pooled", **scores)


def prediction_statistics(runs: Sequence[RunData], metric: str, threshold: float,
                          fractions: Sequence[float] = (0.01, 0.05, 0.1), draws: int = 2000,
                          seed: int = 0) -> dict[str, Any]:
    """The statistics ``formation.prediction`` judges: per early fraction, the leave-one-seed-out AUROC of the
    early model minus that of each declared null (:data:`NULLS`: the early score alone, the layer index alone,
    the two together, a seeded random score), with paired bootstrap intervals over heads at the Bonferroni level
    for the fractions (1 - 0.05 / len(fractions)); ``gains`` holds the gain over the strongest null at each
    fraction (the null with the highest AUROC: ``strongest``), which is what the rule decides on; every
    predictor's AUROC is in ``aurocs``. A fraction whose labels are all one class (or with fewer than 2 early
    checkpoints) is left out and named. ``positives``: heads at or above the threshold at the end."""
    rng = np.random.default_rng(seed)
    level = 0.05 / len(fractions)
    gains: dict[str, list[float]] = {}
    by_null: dict[str, dict[str, list[float]]] = {}
    strongest: dict[str, str] = {}
    aurocs: dict[str, dict[str, float | None]] = {}
    left_out: dict[str, str] = {}
    positives = 0
    for f in fractions:
        try:
            y, probs, _, _ = loso(runs, metric, threshold, f)
        except ValueError as exc:
            left_out[str(f)] = str(exc)
            continue
        positives = int(y.sum())
        probs = {**probs, "random": np.random.default_rng(seed).random(len(y))}
        aurocs[str(f)] = {k: roc_auc(y, p) for k, p in probs.items()}
        if any(aurocs[str(f)][k] is None for k in ("early_model", *NULLS)):
            left_out[str(f)] = "every head has one label"
            continue
        by_null[str(f)] = {n: _paired_gain(y, probs["early_model"], probs[n], draws, level, rng) for n in NULLS}
        strongest[str(f)] = max(NULLS, key=lambda n: (aurocs[str(f)][n], -NULLS.index(n)))
        gains[str(f)] = by_null[str(f)][strongest[str(f)]]
    return {"seeds": len(runs), "gains": gains, "gains_by_null": by_null, "strongest": strongest,
            "nulls": list(NULLS), "aurocs": aurocs, "left_out": left_out, "level": 1 - level, "draws": draws,
            "positives": positives}


def _paired_gain(y: np.ndarray, p: np.ndarray, q: np.ndarray, draws: int, level: float,
                 rng: np.random.Generator) -> list[float]:
    """AUROC(p) − AUROC(q) and its paired bootstrap interval over heads at ``level`` (two-sided)."""
    boot = []
    for _ in range(draws):
        i = rng.integers(0, len(y), len(y))
        a, b = roc_auc(y[i], p[i]), roc_auc(y[i], q[i])
        if a is not None and b is not None:
            boot.append(a - b)
    lo, hi = np.quantile(boot, [level / 2, 1 - level / 2])
    return [float(roc_auc(y, p) - roc_auc(y, q)), float(lo), float(hi)]  # type: ignore[operator]
