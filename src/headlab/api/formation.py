"""Python twins of the formation work: ``headlab train``, ``track``, ``predict`` and ``induce``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

from headlab.display import Displayable
from headlab.errors import HeadlabError, in_callers_words
from headlab.formation import tracking
from headlab.formation.claims import run_data
from headlab.formation.induce import study as induce_study
from headlab.formation.induce.arms import INDUCE, InduceSettings
from headlab.formation.induce.study import InduceResult
from headlab.formation.predict import PREDICT, PredictResult, PredictSettings, early_prediction
from headlab.formation.track_report import THRESHOLDS, write_track_report
from headlab.formation.tracking import TRACK, TrackResult, TrackSettings
from headlab.formation.training_run import tracked_training
from headlab.io import read_jsonl, saving, writing
from headlab.settings import takes, takes_run
from headlab.training import load_config
from headlab.training.checkpoint import checkpoints
from headlab.training.config import TrainConfig, config_path
from headlab.training.data import bpe_size
from headlab.values import Rule, listed, refuse


@dataclasses.dataclass
class TrainedRun(Displayable):
    """A finished (or resumed and finished) training run: its folder, steps and throughput."""

    folder: Path
    steps: int
    tokens_per_s: float
    checkpoints: list[int]
    main: bool = True  # False on the other ranks under torchrun
    final_loss: float | None = None  # training loss at the last logged step (nats/token)

    def markdown(self) -> str:
        loss = f", final training loss {self.final_loss:.3f} nats/token" if self.final_loss is not None else ""
        return (f"trained **{self.steps}** steps ({self.tokens_per_s:.0f} tokens/s{loss}) into `{self.folder}`; "
                f"{len(self.checkpoints)} checkpoints (steps {', '.join(map(str, self.checkpoints))})\n")


@in_callers_words
@takes_run(required=("out",))
def train(config: str | Path | TrainConfig, *, out: str | Path, resume: bool = False, seed: int | None = None,
          device: str, progress: bool) -> TrainedRun:
    """Train a small Transformer from scratch on real text: ``config`` is a TOML file (docs/training.md), a
    config that ships with headlab by name (``smoke``, ``study``, ``scale/xs``, ...:
    :func:`~headlab.training.config.named_configs`) or a :class:`~headlab.training.config.TrainConfig`;
    ``seed`` overrides ``optim.seed``. The run folder ``out`` gets checkpoints, metrics, gradient signals and the
    head monitor's rows; ``resume`` continues from its last good checkpoint. Also runs under torchrun.

    Example:

        run = headlab.train("smoke", out="runs/smoke")      # a named config, or a TOML file
        headlab.track(run.folder).figure("previous-token")
    """

    refuse("seed", Rule("whole", 0, optional=True), seed)
    cfg = config if isinstance(config, TrainConfig) else load_config(config)
    bpe_size(cfg.data.tokenizer, str(config) if not isinstance(config, TrainConfig) else "config")  # before any work
    if seed is not None:
        cfg.optim.seed = seed
    t = tracked_training(cfg, out, resume=resume, progress=progress, device=device)
    steps = [s for s, _ in checkpoints(Path(out))] if t.main else []
    log = Path(out) / "metrics.jsonl"
    rows = read_jsonl(log) if t.main and log.exists() else []
    loss = float(rows[-1]["loss"]) if rows else None
    return TrainedRun(Path(out), t.cfg.optim.steps, float(t.tokens_per_s), steps, t.main, loss)


@in_callers_words
@takes(TrackSettings)
def track(run: str | Path, settings: TrackSettings = TRACK, *, progress: bool,
          out: str | Path | None, overwrite: bool) -> TrackResult:
    """Score every head at every checkpoint of a training run (slash mass on ``n`` slash stimuli, and the census
    detectors on the run's probe windows); phases and plots are written to ``out`` (default RUN/track).
    ``r.figure(metric)`` draws one metric over training; ``to_pandas()``: one row per (step, metric, head).

    Example:

        t = headlab.track("runs/smoke", n=8)
        t.figure("previous-token")
        t.to_pandas().query("metric == 'slash_mass'").pivot(index="step", columns="head", values="score")
    """
    with writing(out or Path(run) / "track", [*TrackResult.files(), TrackResult.REPORT], overwrite) as folder:
        t = tracking.track(run, settings, progress=progress)
        t.write(folder)
        write_track_report(t, Path(run), folder)
    return t


@in_callers_words
@listed("runs")
@takes(PredictSettings)
def predict(runs: Sequence[str | Path], settings: PredictSettings = PREDICT, *,
            out: str | Path | None, overwrite: bool) -> PredictResult:
    """Predict from the first ``early`` share of training which heads end with ``metric`` >= ``threshold``
    (default: the tracker's threshold for the metric), over tracked runs of several seeds, leave one seed out:
    precision, recall and ROC AUC of the early model and of the early score alone.

    Example:

        p = headlab.predict(["runs/s0", "runs/s1", "runs/s2"], metric="induction")
        p.early_model["roc_auc"], p.early_score_alone["roc_auc"]
    """
    metric = settings.metric
    with saving(out, PredictResult.files(), overwrite) as folder:
        data = [run_data(r, metric) for r in runs]
        thr = settings.threshold if settings.threshold is not None else THRESHOLDS.get(metric, 0.5)
        try:
            res = early_prediction(data, metric, thr, settings.early)
        except ValueError as exc:
            raise HeadlabError(str(exc)) from None
        if folder is not None:
            res.write(folder)
    return res


@in_callers_words
@listed("arms", "seeds", "heads")
@takes(InduceSettings, required=("out",))
def induce(config: str | Path, settings: InduceSettings = INDUCE, *, out: str | Path, progress: bool,
           overwrite: bool) -> InduceResult:
    """Grow a ``/`` head on purpose: train ``config`` under each arm (default: all; the data lever with
    ``slash_share``, the auxiliary loss on ``heads`` with ``weight`` until ``stop`` of the run, the
    initialization lever, and their combinations) and seed; measure every checkpoint on held-out probe windows;
    ablate against ``draws`` matched random heads. Writes ``induce.md``, ``induce.json`` and ``induce.png``;
    finished runs in ``out/runs`` are reused and interrupted ones resumed.

    Example:

        study = headlab.induce("induce", out="runs/ind", arms=["plain", "aux"], seeds=[0])
        study            # the verdict table; study.data is induce.json
    """
    config = config_path(config)  # a file or a named config; one line when neither (the arms were checked first)
    with saving(out, InduceResult.files(), overwrite) as folder:
        return induce_study.run_arms(config, folder or out, settings, progress=progress)
