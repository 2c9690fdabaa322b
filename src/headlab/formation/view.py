"""A training run's view: a checkpoint slider over what the run's results hold, and every checkpoint's maps.

Scores are read: the tracker's (``headlab track``, with its phases) and the head monitor's series
(``monitor.jsonl``). A run without a track is scored only on texts given to the viewer; otherwise its page says
to run ``headlab track`` and shows the maps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from headlab.corpus import Sample, repeat_probe
from headlab.formation.head_monitor import read_monitor
from headlab.formation.track_report import PhasesResult
from headlab.formation.tracking import TrackResult
from headlab.probes.scoring import score_probes
from headlab.progress import bar as progress_bar
from headlab.result import found_in
from headlab.training import checkpoint as ckpt
from headlab.training.data import load_pool
from headlab.training.run_model import is_training_run, load_checkpoint_model
from headlab.views.data import ViewData, ViewSample, make_sample, store_maps, text_sample
from headlab.views.sources import FolderSource, Shown, register_source

#: the probe metrics a run without a track is scored by, on the texts given to the viewer
SHOWN_METRICS = ("slash_mass", "offset", "previous-token", "sink")


def probe_samples(run: Path, first: Any) -> list[ViewSample]:
    """The run's own probe windows (the first, and the first with '/'), and the tracker's induction probe."""
    pool, _ = load_pool(run)
    ids = pool.probe_ids[0][pool.probe_mask[0]].tolist()
    slash = first.ids_containing("/")
    samples = [make_sample(first.tokenizer, "probe window 0", ids, [i for i, t in enumerate(ids) if t in slash])]
    with_slash = [r for r in range(len(pool.probe_ids))
                  if any(int(t) in slash for t in pool.probe_ids[r][pool.probe_mask[r]])]
    if with_slash and with_slash[0] != 0:
        ids = pool.probe_ids[with_slash[0]][pool.probe_mask[with_slash[0]]].tolist()
        samples.append(make_sample(first.tokenizer, f"probe window {with_slash[0]} (with '/')", ids,
                                   [i for i, t in enumerate(ids) if t in slash]))
    # the tracker's induction probe: an induction head draws its stripe one token past each earlier copy
    rep = list(repeat_probe(first.tokenizer, 1, min(64, first.facts.max_length), seed=0)[0].input_ids)
    samples.append(make_sample(first.tokenizer, "repeated random tokens (the induction probe)", rep, []))
    return samples


def from_training(run: Path, shown: Shown) -> ViewData:
    """A headlab training run: the checkpoints ``headlab track`` scored (every checkpoint without a track), their
    scores and phases, the head monitor's series, and each checkpoint's maps."""

    cks = ckpt.usable_checkpoints(run)
    tracked = TrackResult.read(run / "track") if TrackResult in found_in(run / "track") else None
    if tracked is not None:
        cks = [(s, f) for s, f in cks if s in set(tracked.steps)] or cks
    first = load_checkpoint_model(run, cks[-1][1])
    texts = shown.texts
    samples = [text_sample(first, t, name) for name, t in texts] if texts else probe_samples(run, first)
    L, H = first.facts.n_layers, first.facts.n_heads
    data = ViewData(title=f"headlab · training run {run.name}", subtitle=f"{L} layers × {H} heads, {len(cks)} "
                    "checkpoints", kind="training", n_layers=L, n_heads=H, causal=first.facts.causal,
                    samples=samples, steps=[s for s, _ in cks], scores=[], scale=shown.scale)
    bar = progress_bar(len(cks), f"view {run.name}: checkpoints", "checkpoint", shown.progress)
    for c, (step, folder) in enumerate(cks):
        loaded = load_checkpoint_model(run, folder)
        if tracked is not None and step in tracked.steps:
            k = tracked.steps.index(step)
            data.scores.append({m: np.asarray(v[k], dtype=float) for m, v in tracked.scores.items()
                                if m != "offset_delta"})
        elif texts:  # scored on the texts the caller gave, not on anything it did not ask for
            data.scores.append(shown_scores(loaded, samples))
        else:
            data.scores.append({})
        store_maps(data, loaded, c)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    monitor_series(data, run)
    if PhasesResult in found_in(run / "track"):
        data.phases = {m: {k: v["phases"] for k, v in heads.items()}
                       for m, heads in PhasesResult.read(run / "track").scores.items()}
    data.notes.append("Scores: " + ("headlab track (probe windows, slash stimuli, repeated tokens)." if tracked
                                    else "the shown texts." if texts else
                                    "none tracked: run headlab track RUN for the tracker's scores, or give texts "
                                    "to score."))
    return data


def shown_scores(loaded: Any, samples: list[ViewSample]) -> dict[str, np.ndarray]:
    """The :data:`SHOWN_METRICS` of one checkpoint on the samples shown, as the tracker's probes score them."""
    natural = [Sample(i, "view", 0, tuple(s.ids)) for i, s in enumerate(samples)]
    return score_probes(loaded, {"natural": natural}, SHOWN_METRICS)


def monitor_series(data: ViewData, run: Path) -> None:
    """The head monitor's scores (``monitor.jsonl``) as ``monitor <metric>`` scores of each checkpoint: the
    latest row at or before its step; its warnings as notes."""

    steps, series, said = read_monitor(run)
    if not steps:
        return
    for c, step in enumerate(data.steps):
        k = int(np.searchsorted(steps, step or 0, side="right")) - 1
        for m, a in series.items():
            data.scores[c][f"monitor {m}"] = a[k] if k >= 0 else np.full(a.shape[1:], np.nan)
    data.notes.append(f"Head monitor: {len(steps)} rows (steps {steps[0]}..{steps[-1]}), shown as the 'monitor' "
                      "scores of the latest row at or before each checkpoint"
                      + "".join(f"; step {w['step']}: {w['message']}" for w in said) + ".")


register_source(FolderSource(
    "training", "a training run (config.toml and checkpoints/)",
    lambda p: is_training_run(p) and (p / "checkpoints").is_dir(), from_training, rank=1))
