"""Every head's scores at every checkpoint of a run (``headlab track RUN``).

Probe sets, fixed for the whole run (so scores are comparable across checkpoints):

* ``natural``: the run's held-out probe windows (real text, each with a `/`; never trained on);
* ``slash``: the constructed `/` stimuli of the characterization work (``headlab.stimuli``);
* ``repeat``: random tokens repeated twice (seeded), the standard probe for induction heads.

Metrics per head (the means over the probe samples, with the detectors of ``headlab.detectors``):
``slash_mass`` (token detector on natural), ``slash_mass_stimuli`` (on the slash suite), ``offset`` (best
SlashScore(Δ) over Δ = 0..8 on natural; ``offset_delta`` is that Δ), ``previous-token`` and ``sink`` (natural),
``induction`` (repeat). Output: ``track.json`` (arrays checkpoint x layer x head per metric) and
``track.csv`` (one row per checkpoint, head and metric).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from headlab.census.result import BOUND_SLACK
from headlab.corpus import Sample, repeat_probe
from headlab.detectors.base import MASS
from headlab.errors import HeadlabError
from headlab.head import name as head_name
from headlab.io import read_jsonl, write_text_atomic
from headlab.notices import say
from headlab.plotting import color_limits, new_figure
from headlab.probes import make_suite, to_samples
from headlab.probes.scoring import rows_to_samples, score_probes
from headlab.progress import bar as progress_bar
from headlab.result import Result
from headlab.settings import Settings, setting
from headlab.training import checkpoint as ckpt
from headlab.training.config import load_config
from headlab.training.data import load_pool
from headlab.training.run_model import load_checkpoint_model

METRICS = ("slash_mass", "slash_mass_stimuli", "offset", "offset_delta", "previous-token", "induction", "sink")
#: the range each metric's scores lie in: every one but the diagonal index is a share of attention
BOUNDS = {m: MASS for m in METRICS if not m.endswith("_delta")}


@dataclass
class TrackResult(Result):
    """Every head's scores at every checkpoint of a run; ``to_pandas()``: one row per (step, metric, head)."""

    run: str
    steps: list[int]
    n_layers: int
    n_heads: int
    scores: dict[str, np.ndarray]                 # metric -> (S, L, H)
    loss: dict[int, float] = field(default_factory=dict)  # step -> training loss at that step
    probes: dict[str, int] = field(default_factory=dict)

    def markdown(self) -> str:
        lines = [f"**{self.run}**: {len(self.steps)} checkpoints (steps {self.steps[0]}..{self.steps[-1]}), "
                 f"{self.n_layers}x{self.n_heads} heads", "", "| metric | top heads at the last checkpoint |",
                 "|---|---|"]
        for m, a in self.scores.items():
            if m.endswith("_delta"):  # a diagonal index, not a score to rank by
                continue
            last = np.nan_to_num(a[-1], nan=-np.inf)  # (L, H)
            best = np.argsort(-last, axis=None)[:3]
            cells = [f"{l}.{h} {a[-1, l, h]:.3f}" for l, h in zip(*np.unravel_index(best, last.shape))]
            lines.append(f"| {m} | {', '.join(cells)} |")
        return "\n".join(lines) + "\n"

    def records(self) -> list[dict[str, Any]]:
        return [{"step": s, "metric": m, "head": f"{l}.{h}", "layer": l, "index": h, "score": float(a[i, l, h])}
                for m, a in self.scores.items() for i, s in enumerate(self.steps)
                for l in range(self.n_layers) for h in range(self.n_heads)]

    def figure(self, metric: str = "slash_mass") -> Any:
        """Every head's ``metric`` score over the checkpoints (matplotlib figure)."""
        if metric not in self.scores:
            raise HeadlabError(f"unknown metric {metric!r}; tracked: {', '.join(self.scores)}")
        return heatmap_figure(self, metric)

    KIND = "track.json"
    COMPANIONS = ("track.csv",)
    #: the report `headlab track` writes beside them (phases, figures and the head monitor's account)
    REPORT: ClassVar[str] = "track.md"
    KEYS = ("run", "steps", "n_layers", "n_heads", "probes", "loss", "scores")

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "steps": self.steps, "n_layers": self.n_layers, "n_heads": self.n_heads,
                "probes": self.probes, "loss": {str(k): v for k, v in self.loss.items()},
                "scores": {m: np.where(np.isnan(a), None, a).tolist()  # type: ignore[call-overload]
                           for m, a in self.scores.items()}}

    @classmethod
    def decode(cls, d: dict[str, Any]) -> "TrackResult":
        scores = {m: np.array(a, dtype=float) for m, a in d["scores"].items()}
        for m, a in scores.items():
            lo, hi = BOUNDS.get(m, (-np.inf, np.inf))
            bad = np.argwhere((a < lo - BOUND_SLACK) | (a > hi + BOUND_SLACK))  # NaN (undefined) compares False
            if bad.size:
                i, layer, h = (int(x) for x in bad[0][:3])
                raise HeadlabError(f"{cls.KIND}: the {m} score {a[i, layer, h]:.6g} of head {layer}.{h} at step "
                                   f"{d['steps'][i]} is outside [{lo:g}, {hi:g}], where every {m} score lies: not "
                                   "a measured track; track the run again")
        return TrackResult(d["run"], d["steps"], d["n_layers"], d["n_heads"], scores,
                           {int(k): v for k, v in d["loss"].items()}, d["probes"])

    def write_companions(self, folder: Path) -> None:
        """``track.csv``: one row per checkpoint, head and metric."""
        rows = ["step,layer,head,metric,value"]
        for m, a in self.scores.items():
            for si, s in enumerate(self.steps):
                for layer in range(self.n_layers):
                    for h in range(self.n_heads):
                        rows.append(f"{s},{layer},{h},{m},{a[si, layer, h]:.6g}")
        write_text_atomic(folder / "track.csv", "\n".join(rows) + "\n")


def probe_sets(run: Path, tokenizer: Any, max_length: int, n_stimuli: int, seed: int) -> dict[str, list[Sample]]:
    pool, _ = load_pool(run)
    stim = [s for s in make_suite("slash", n_stimuli, seed)]
    stim_samples = [s for s in to_samples(stim, tokenizer, 10**6) if len(s.input_ids) <= max_length]
    return {"natural": rows_to_samples(pool.probe_ids, pool.probe_mask, "probe"),
            "slash": stim_samples,
            "repeat": repeat_probe(tokenizer, max(8, len(pool.probe_ids)), max_length, seed)}


def score_model(loaded: Any, probes: dict[str, list[Sample]]) -> dict[str, np.ndarray]:
    """(L, H) per metric of :data:`METRICS` for one model."""
    return score_probes(loaded, probes, METRICS)


@dataclass(frozen=True)
class TrackSettings(Settings):
    """The probe set every checkpoint of a run is scored on: ``n`` slash stimuli drawn with ``seed`` (the run's
    held-out probe windows and the repeat probe come with the run)."""

    FAMILY: ClassVar[str] = "track"

    n: int = setting(24, "slash stimuli in the probe set")
    seed: int = setting(0, "random seed (the stimuli)")


#: track given no options
TRACK = TrackSettings()


def track(run: str | Path, settings: TrackSettings = TRACK, *, progress: bool) -> TrackResult:
    """Score every head at every checkpoint of ``run`` (damaged checkpoints are reported and skipped)."""

    run = Path(run)
    if not (run / "config.toml").exists():
        raise HeadlabError(f"{run} is not a training run (no config.toml)")
    if not ckpt.checkpoints(run):
        raise HeadlabError(f"{run} has no checkpoints")
    found = ckpt.sound_checkpoints(run)  # damaged ones are named in a warning and left out
    cfg = load_config(run / "config.toml")
    steps, per_step = [], []
    probes = None
    bar = progress_bar(len(found), f"track {run.name}", "checkpoint", progress)
    for step, folder in found:
        try:
            loaded = load_checkpoint_model(run, folder)
        except HeadlabError as exc:
            say(f"checkpoint {folder.name} is damaged ({exc}); skipped")
            continue
        if probes is None:
            probes = probe_sets(run, loaded.tokenizer, cfg.model.max_length, settings.n, settings.seed)
        with torch.inference_mode():
            per_step.append(score_model(loaded, probes))
        steps.append(step)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if not steps:
        raise HeadlabError(f"no readable checkpoint in {run}")
    loss = {}
    if (run / "metrics.jsonl").exists():
        rows = read_jsonl(run / "metrics.jsonl")
        loss = {r["step"]: r["loss"] for r in rows if r["step"] in set(steps)}
    scores = {m: np.stack([p[m] for p in per_step]) for m in METRICS}
    return TrackResult(str(run), steps, cfg.model.n_layers, cfg.model.n_heads, scores, loss,
                       {k: len(v) for k, v in (probes or {}).items()})


def read_signals(run: str | Path) -> tuple[list[int], dict[str, np.ndarray]]:
    """``signals.jsonl`` (or, in a committed record, ``signals.jsonl.gz``) as steps and ``{signal: (S, L, H)}``."""
    path = Path(run) / "signals.jsonl"
    packed = path.with_name(path.name + ".gz")
    if not path.exists() and not packed.exists():
        return [], {}
    # a record of a finished run keeps its signals gzipped: 3.4 MB of text each, a tenth of that packed
    text = path.read_text() if path.exists() else gzip.decompress(packed.read_bytes()).decode()
    rows = []
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            break  # torn last line
    steps = [r["step"] for r in rows]
    names = rows[0]["signals"].keys() if rows else []
    return steps, {n: np.array([r["signals"][n] for r in rows], dtype=float) for n in names}


def heatmap_figure(t: TrackResult, m: str) -> Any:
    """Every head's ``m`` score at every checkpoint (matplotlib figure)."""
    a = t.scores[m]  # (S, L, H)
    fig = new_figure(figsize=(7, 0.3 * t.n_layers * t.n_heads + 1.5))
    ax = fig.subplots()
    limits = color_limits(a)  # a share on a fixed 0-1 scale: noise in 0.07-0.09 does not look like a head
    im = ax.imshow(a.reshape(len(t.steps), -1).T, aspect="auto", cmap="viridis", interpolation="nearest", **limits)
    ax.set_xticks(range(len(t.steps)), [str(s) for s in t.steps], rotation=90, fontsize=7)
    ax.set_yticks(range(t.n_layers * t.n_heads),
                  [head_name(l, h) for l in range(t.n_layers) for h in range(t.n_heads)], fontsize=7)
    ax.set(xlabel="checkpoint step", ylabel="head (layer.head)", title=f"{m} score per head over training")
    scale = "fixed 0-1 scale" if limits == {"vmin": 0.0, "vmax": 1.0} else "its range"
    fig.colorbar(im, ax=ax, label=f"{m} score ({scale})")
    fig.tight_layout()
    return fig
