"""Controls of the formation rules, on tracked runs made as the long study's are measured: a 3x4 model, 48
log-spaced checkpoints to 300,000 steps, gradient signals at the same steps, three seeds (the rules' minimum; four
per arm for initialization, its minimum). The statistics are computed by the formation claims' own code from
:class:`~headlab.formation.tracking.TrackResult` objects: the segment fits and their null
(:func:`~headlab.formation.stages.stage_statistics`), the leave-one-seed-out prediction against every declared null
(:func:`~headlab.formation.predict.prediction_statistics`), the exact permutation test and Fisher's test of the
rules.
"""

from __future__ import annotations

import numpy as np

from headlab.calibration import Control, Stats, control
from headlab.formation.predict import RunData, prediction_statistics
from headlab.formation.stages import stage_statistics
from headlab.formation.tracking import TrackResult
from headlab.rulebook.formation import MIN_FOSTER_SEEDS, MIN_INIT_SEEDS, MIN_SEEDS

L, H = 3, 4  # the long study's shape
STEPS = [int(s) for s in np.unique(np.logspace(1, np.log10(300_000), 48).astype(int))]
SPECIALIZE = 2  # heads per run that reach the `/` threshold


def _trajectory(rng: np.random.Generator, kind: str) -> np.ndarray:
    """A head's `/` score at each checkpoint: ``stages``, flat until 10k, rising until 100k, then flat (the
    document's three stages); ``smooth``, one rise over the whole run; ``flat``, a head that never specializes."""
    x = np.log10(STEPS)
    if kind == "stages":
        y = 0.05 + 0.65 * np.clip((x - 4.0) / 1.0, 0, 1)
    elif kind == "late":  # specializes after the early shares of training the prediction reads (1-10%)
        y = 0.05 + 0.65 * np.clip((x - np.log10(50_000)) / (x[-1] - np.log10(50_000)), 0, 1)
    elif kind == "smooth":
        y = 0.05 + 0.65 * (x - x[0]) / (x[-1] - x[0])
    else:
        y = np.full(len(x), rng.uniform(0.03, 0.2))
    return np.clip(y + rng.normal(0, 0.02, len(x)), 0, 1)


def _track(rng: np.random.Generator, kind: str, heads: list[tuple[int, int]]) -> TrackResult:
    scores = np.stack([np.stack([_trajectory(rng, kind if (l, h) in heads else "flat") for h in range(H)], 1)
                       for l in range(L)], 1)  # (S, L, H)
    return TrackResult("control", STEPS, L, H, {"slash_mass": scores})


def _heads(rng: np.random.Generator, k: int = SPECIALIZE) -> list[tuple[int, int]]:
    return [(int(i) // H, int(i) % H) for i in rng.choice(L * H, k, replace=False)]


def _stages(rng: np.random.Generator, planted: bool) -> Stats:
    tracks = [_track(rng, "stages" if planted else "smooth", _heads(rng)) for _ in range(MIN_SEEDS)]
    return stage_statistics(tracks, "slash_mass")


def _run(rng: np.random.Generator, planted: bool) -> RunData:
    """A run whose specialized heads show a gradient signal from the first checkpoint (planted), or one whose
    signal is unrelated to which heads specialize (null); the early scores of every head look alike."""
    heads = _heads(rng)
    t = _track(rng, "late", heads)  # nothing visible early in the score
    marked = set(heads) if planted else set(_heads(rng))
    slash = rng.lognormal(0, 0.3, (len(STEPS), L, H))
    for l, h in marked:
        slash[:, l, h] *= 4.0
    return RunData("control", t, STEPS, {"logit_slash": slash, "logit_other": rng.lognormal(0, 0.3, slash.shape)},
                   STEPS[-1])


def _prediction(rng: np.random.Generator, planted: bool) -> Stats:
    runs = [_run(rng, planted) for _ in range(MIN_SEEDS)]
    stats = prediction_statistics(runs, "slash_mass", 0.5, draws=100, seed=int(rng.integers(1 << 30)))
    return {**stats, "target": "slash_mass", "runs": len(runs), "formed": len(runs), "top": [0.7] * len(runs)}


def _init(rng: np.random.Generator, planted: bool, runs: int = MIN_INIT_SEEDS) -> Stats:
    a = rng.poisson(5.0 if planted else 2.0, runs).tolist()
    b = rng.poisson(0.5 if planted else 2.0, runs).tolist()
    return {"a": a, "b": b, "target": "slash_mass", "runs": 2 * runs, "formed": 1, "top": [0.7]}


def _foster(rng: np.random.Generator, planted: bool, seeds: int) -> Stats:
    k1 = int(rng.binomial(seeds, 0.95 if planted else 0.3))
    return {"arm": [k1, seeds], "plain": [int(rng.binomial(seeds, 0.05 if planted else 0.3)), seeds]}


RUNS = f"{MIN_SEEDS} runs of 300,000 steps, 48 checkpoints, a 3x4 model"
control(Control("formation.stages", RUNS, "specialized heads flat to 10k, rising to 100k, then flat",
                "specialized heads rising smoothly over the run", lambda r: _stages(r, True),
                lambda r: _stages(r, False), "data", 60, ci=False))
control(Control("formation.prediction", RUNS + "; bootstrap of 100 draws",
                "the heads that specialize carry 4x the `/` gradient signal from the start",
                "a 4x signal on heads unrelated to which specialize", lambda r: _prediction(r, True),
                lambda r: _prediction(r, False), "data", 25, ci=False))
control(Control("formation.init", f"{MIN_INIT_SEEDS} against {MIN_INIT_SEEDS} runs (the rule's minimum)",
                "5 against 0.5 specialized "
                "heads per run (Poisson)", "2 against 2", lambda r: _init(r, True), lambda r: _init(r, False),
                "statistics", 500, at=lambda n: (lambda r: _init(r, True, n), lambda r: _init(r, False, n)),
                unit="runs per arm", grid=(4, 5, 6, 8, 10)))
control(Control("formation.foster", f"{MIN_FOSTER_SEEDS} seeds per arm (the rule's minimum)",
                "SDH at the end in 95% of the arm's seeds, 5% of the plain arm's", "30% in both",
                lambda r: _foster(r, True, MIN_FOSTER_SEEDS), lambda r: _foster(r, False, MIN_FOSTER_SEEDS),
                "statistics", 500, at=lambda n: (lambda r: _foster(r, True, n), lambda r: _foster(r, False, n)),
                unit="seeds per arm", grid=(5, 6, 7, 8, 10, 12)))
