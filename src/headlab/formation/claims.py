"""The slash-heads document's formation claims judged on tracked training runs: three stages (of the specialized
heads' scores, and of every head's slash-gradient share), early prediction and initialization, each by its
declared rule in :mod:`headlab.rulebook.formation`; a claim whose runs are missing is "not measured"."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from headlab.errors import HeadlabError
from headlab.formation.induce.measure import formed_in
from headlab.formation.predict import RunData, prediction_statistics
from headlab.formation.stages import formed, gradient_stage_statistics, specialized, stage_statistics
from headlab.formation.track_report import THRESHOLDS
from headlab.formation.tracking import TrackResult, read_signals
from headlab.io import write_text_atomic
from headlab.result import Result, found_in
from headlab.rulebook import judge, label
from headlab.rulebook.formation import DOCUMENT_TARGET
from headlab.rulebook.multiplicity import holm, stated
from headlab.rulebook.registration import file_digest, judged_as_produced
from headlab.training.config import load_config


def _tracked(run: str | Path) -> TrackResult:
    """A run folder's tracked scores; one line when it has not been tracked."""
    path = Path(run) / "track"
    if TrackResult not in found_in(path):
        raise HeadlabError(f"{run} has not been tracked: run headlab track {run} first")
    return TrackResult.read(path)


def run_data(run: str | Path, metric: str | None = None) -> RunData:
    """A tracked run folder's scores, gradient signals and planned steps; one line when it is not tracked or
    has no ``metric``."""

    track = _tracked(run)
    if metric is not None and metric not in track.scores:
        raise HeadlabError(f"unknown metric {metric!r}; tracked: {', '.join(track.scores)}")
    steps, sig = read_signals(run)
    return RunData(str(run), track, steps, sig, load_config(Path(run) / "config.toml").optim.steps)


def specialized_counts(runs: Sequence[str | Path], metric: str = DOCUMENT_TARGET) -> list[int]:
    """Per tracked run, how many heads of ``metric`` specialize (peak at or above its threshold,
    :func:`headlab.formation.stages.specialized`): what the initialization claim compares between two arms."""
    return [len(specialized(_tracked(r), metric)) for r in runs]  # the scores only: no gradient signals to read


@dataclass
class FormationClaimsResult(Result):
    """``formation_claims.json``: one row per formation claim, its rule, statistics and verdict."""

    KIND = "formation_claims.json"
    COMPANIONS = ("formation_claims.md",)
    runs: list[str]
    metric: str
    rows: list[dict[str, Any]]
    #: what produced each run's data: its training config (config.toml: model, data, budget, seed), in run order
    produced: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def produced_from(cls, doc: dict[str, Any]) -> list[dict[str, Any]]:
        """Per run, its folder and, where recorded, its training config: the same config trained again into
        another folder is the same data, and so is whatever a declared run's folder holds later."""
        return [{"run": r} for r in doc["runs"]] + [{"config": c} for c in doc.get("produced") or []]

    def markdown(self) -> str:
        lines = [f"Formation claims on {len(self.runs)} run(s); prediction of `{self.metric}`", "",
                 "| claim | rule | verdict | evidence |", "|---|---|---|---|"]
        lines += [f"| {r['claim']} | `{r['rule']}` | {label(r)} | {r.get('power', '')} |" for r in self.rows]
        lines += ["", stated(self.rows)]
        stages = [r for r in self.rows if r["rule"] == "formation.stages" and r.get("stats")]
        if stages:
            lines += ["", "Three stages, by BIC against log step (1, 2 or 3 segments per head); the median boundaries "
                      "beside the document's 10,000 and 100,000 steps:", "",
                      "| trajectories | specialized heads | best fit 1 / 2 / 3 segments | median boundaries (steps) |",
                      "|---|---|---|---|"]
            for r in stages:
                st, k = r["stats"], {str(a): b for a, b in r["stats"]["by_k"].items()}  # JSON keys are strings
                bounds = ", ".join(f"{b:,.0f}" for b in st.get("boundaries") or [] if b is not None) or "-"
                lines.append(f"| {r['claim'].split('(')[-1].rstrip(')')} | {st['heads']} | {k.get('1', 0)} / "
                             f"{k.get('2', 0)} / {k.get('3', 0)} | {bounds} |")
        aurocs = next((r["stats"].get("aurocs") for r in self.rows if r["rule"] == "formation.prediction"
                       and r.get("stats")), None)
        if aurocs:
            fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
            names = ("early_model", "early_score_alone", "layer_index", "score_and_layer", "random")
            lines += ["", "Early prediction, leave-one-seed-out AUROC by the share of training the features come "
                      "from:", "", "| first | " + " | ".join(n.replace("_", " ") for n in names) + " |",
                      "|---|" + "---|" * len(names)]
            lines += [f"| {float(f):.0%} | " + " | ".join(fmt(a.get(n)) for n in names) + " |"
                      for f, a in aurocs.items()]
        return "\n".join(lines) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "formation_claims.md", self.markdown())

    def evidence(self) -> list[str]:
        """The sha256 of the tracked scores of its runs, where they are on disk."""
        return evidence_of(self.runs)

    def verdicts(self) -> dict[str, tuple[str, str, str]]:
        """Each claim's verdict by name: its rule, label and power statement."""
        return {f"{r['claim']} ({self.metric})": (r["rule"], label(r), r.get("power", "")) for r in self.rows}

    def rejudged(self) -> FormationClaimsResult:
        """The claims judged again by the current rule book from the statistics each row keeps."""
        return FormationClaimsResult(self.runs, self.metric,
                                     holm([{"claim": r["claim"], **judge(r["rule"], r["stats"], self.evidence())}
                                           for r in self.rows]), self.produced)


def claim_name(claim: str, metric: str) -> str:
    """A row's name: the document's claim on its own object, or, on another kind of head, a row named for what
    it is (never under the document's claim alone)."""
    if metric == DOCUMENT_TARGET:
        return claim
    return f"{claim}, of {metric} heads (ours: the document's claim is about SDHs)"


def evidence_of(runs: Sequence[str | Path]) -> list[str]:
    """The sha256 of the tracked scores the claims are judged from (files that are missing are left out)."""
    paths = [Path(r) / "track" / TrackResult.KIND for r in runs]
    return [file_digest(p) for p in paths if p.exists()]


def formation_claims(runs: Sequence[str | Path], metric: str = DOCUMENT_TARGET,
                     init_arms: tuple[Sequence[int], Sequence[int]] | None = None,
                     draws: int = 2000) -> FormationClaimsResult:
    """Judge the formation claims on tracked ``runs`` (seeds of one config), on the heads of ``metric``;
    ``init_arms``: the specialized heads per run under two initializations (the initialization claim is "not
    measured" without them); ``draws``: bootstrap draws of the prediction intervals."""
    data = [run_data(r, metric) for r in runs]
    tracks = [d.track for d in data]
    strict = [formed_in(r) for r in runs]  # where a run has its strict rule at every checkpoint (measure.json)
    signals = [(d.signal_steps, d.signals) for d in data if "logit_slash" in d.signals]
    seen = evidence_of(runs)
    rows = [
        ("three stages (specialized heads' scores)", "formation.stages",
         stage_statistics(tracks, metric, strict) if data else None),
        ("three stages (slash-gradient share)", "formation.stages",
         gradient_stage_statistics(signals, tracks, metric, strict) if signals and len(signals) == len(data)
         else None),
        ("early prediction", "formation.prediction", {**prediction_statistics(
            data, metric, THRESHOLDS.get(metric, 0.5), draws=draws), **formed(tracks, metric, strict)}
         if len(data) >= 2 else None),
        ("initialization", "formation.init", None if init_arms is None else
         {"a": list(init_arms[0]), "b": list(init_arms[1]), **formed(tracks, metric, strict),
          "runs": len(init_arms[0]) + len(init_arms[1]), "formed": sum(k > 0 for k in [*init_arms[0], *init_arms[1]])}),
    ]
    result = FormationClaimsResult([str(r) for r in runs], metric,
                                   holm([{"claim": claim_name(c, metric), **judge(rule, stats, seen)}
                                         for c, rule, stats in rows]), [run_config(r) for r in runs])
    return judged_as_produced(result)  # a rerun of declared runs reads exploratory however its bytes differ


def run_config(run: str | Path) -> dict[str, Any]:
    """A run's training config as its ``config.toml`` says it (what produced the run), ``{}`` where it has none."""
    path = Path(run) / "config.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
