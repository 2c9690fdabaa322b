"""What one run of the induction study measured, checkpoint by checkpoint, on its held-out probe windows (real
text, each with a `/`, never trained on):

* ``mass``: every head's mean `/` mass (the token detector);
* ``passed``: the strict slash-dominance rule (mass > 0.5 in 3 consecutive probe windows, in their fixed order);
* ``loss``: the held-out next-token loss (nats/token, mean over the probe windows);

then, on the final weights, whether the head that passes (or, without one, the top head by mass) is functional:
zero-ablating it against ``draws`` matched random heads of the same layer (:func:`headlab.ablation.ablate_experiment`
on corpus windows of the run's own corpus), the change of next-token loss on targets within 3 tokens after a `/`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from headlab.ablation import ablate_experiment
from headlab.ablation.experiment import ABLATE
from headlab.ablation.metrics import window_losses
from headlab.census.stats import SDH, ConsecutiveRule
from headlab.detectors import make
from headlab.formation.sdh import Formed, formed
from headlab.head import Head
from headlab.models.loaded import device_of
from headlab.probes.scoring import rows_to_samples, sample_scores
from headlab.result import Result
from headlab.training import checkpoint as ckpt
from headlab.training.config import load_config
from headlab.training.data import load_pool
from headlab.training.run_model import load_checkpoint_model


def checkpoint_scores(loaded: Any, probe: list[Any]) -> tuple[np.ndarray, np.ndarray, float]:
    """``(mass (L, H), passed (L, H) bool, held-out loss)`` of one model on the probe windows."""

    L, H = loaded.facts.n_layers, loaded.facts.n_heads
    rule = ConsecutiveRule((L, H), SDH.threshold, SDH.consecutive)
    token = sample_scores(loaded, [make("token")], probe)["token"]  # (N, L, H), the probe's fixed order
    rule.update(token)
    with torch.inference_mode():
        loss = float(window_losses(loaded, [list(s.input_ids) for s in probe], batch_size=16).mean())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a head no window scores stays NaN
        return np.nanmean(token, 0), rule.passed, loss


@dataclass
class MeasureResult(Result):
    """``measure.json``, one run of the study: per checkpoint ``steps``, every head's ``mass`` (S, L, H), the
    strict rule's ``passed`` (S, L, H) and the held-out ``loss``; the first step and heads that pass, those that
    pass at the end, the ``induced_heads`` and the step the auxiliary term stopped (``aux_stop``, None without
    it); the head ``ablated`` on the final weights (``ablated_is_sdh``: it passes) and the ``ablation``'s effect
    against matched random heads (None with no draws)."""

    KIND: ClassVar[str] = "measure.json"
    run: str
    arm: str
    seed: int
    steps: list[int]
    mass: list[list[list[float]]]
    passed: list[list[list[bool]]]
    loss: list[float]
    first_pass_step: int | None
    first_pass_heads: list[Head]
    final_pass_heads: list[Head]
    induced_heads: list[Head]
    aux_stop: int | None
    ablated: Head
    ablated_is_sdh: bool
    ablation: dict[str, Any] | None = None


def measure_run(run: Path, arm: str, draws: int, seed: int, progress: bool = False) -> MeasureResult:
    """The record of one finished run of ``arm`` (``measure.json``)."""

    cfg = load_config(run / "config.toml")
    pool, _ = load_pool(run)
    probe = rows_to_samples(pool.probe_ids, pool.probe_mask, "probe")
    steps, mass, passed, loss = [], [], [], []
    for step, folder in ckpt.sound_checkpoints(run):
        last = load_checkpoint_model(run, folder)  # the last checkpoint is the final step's weights
        m, p, lo = checkpoint_scores(last, probe)
        steps.append(step)
        mass.append(m.tolist())
        passed.append(p.tolist())
        loss.append(lo)
    rec = measure_record(run, arm, steps, mass, passed, loss)
    if draws > 0:
        rec.ablation = _ablation(last, cfg, str(rec.ablated), draws, seed, progress)
    return rec


def measure_record(run: Path, arm: str, steps: list[int], mass: list[Any], passed: list[Any], loss: list[float]
                   ) -> MeasureResult:
    """The record of a run from its per-checkpoint masses, rule and loss (no ablation): the heads that pass first
    and at the end, and the head an ablation would take. Also joins the checkpoints a run scored in two
    sittings (its earlier checkpoints' scores carried, the later ones scored after it resumed)."""
    cfg = load_config(run / "config.toml")
    final = np.array(mass[-1])
    ok = np.array(passed[-1])
    cand = np.where(ok, final, -1.0) if ok.any() else final
    layer, head = np.unravel_index(int(np.argmax(cand)), final.shape)
    sdhs = formed(steps, passed)  # the one definition: first (transient) and final (stable) passes
    first = sdhs.first_step
    return MeasureResult(
        run=str(run), arm=arm, seed=cfg.optim.seed, steps=steps, mass=mass, passed=passed, loss=loss,
        first_pass_step=first,
        first_pass_heads=[Head.parse(h) for h, at in sdhs.passing.items() if first in at],
        final_pass_heads=[Head.parse(h) for h in sdhs.final],
        induced_heads=[Head.parse(h) for h in cfg.induce.heads] if cfg.induce.weight > 0 else [],
        aux_stop=(cfg.induce.stop or cfg.optim.steps) if cfg.induce.weight > 0 else None,
        ablated=Head(int(layer), int(head)), ablated_is_sdh=sdhs.stable)


def _ablation(loaded: Any, cfg: Any, head: str, draws: int, seed: int, progress: bool) -> dict[str, Any]:
    settings = ABLATE.replace(draws=draws, samples=32, window=cfg.data.window, corpus=cfg.data.corpus, seed=seed)
    r = ablate_experiment(loaded, [head], settings, progress=progress, device=str(device_of(loaded.model)),
                          dtype=loaded.dtype)
    c = r.control  # on the loss after `/`: the head's effect minus the matched random heads' mean effect
    return {"head": head, "loss_delta": r.scored["loss"]["delta"], "control_delta": c["delta_mean"],
            "difference": c["difference"], "interval": c["interval"], "p_value": c["p_value"], "draws": c["draws"],
            "n_samples": r.n_samples}


def formed_in(run: str | Path) -> Formed | None:
    """The one definition of an SDH (:mod:`headlab.formation.sdh`) applied to a run folder's strict-rule record
    (``measure.json``); None where it has none."""
    path = Path(run) / MeasureResult.KIND
    if not path.exists():
        return None
    rec = MeasureResult.read(path)
    return formed(rec.steps, rec.passed)


def persistence(rec: MeasureResult) -> dict[str, Any] | None:
    """For a run with the auxiliary loss: whether each induced head still passes after the loss stopped, and the
    last checkpoint step at which it did."""
    if rec["aux_stop"] is None:
        return None

    out = {}
    for name in rec["induced_heads"]:
        h = Head.parse(name)
        after = [(s, p[h.layer][h.head]) for s, p in zip(rec["steps"], rec["passed"]) if s >= rec["aux_stop"]]
        out[name] = {"checkpoints_after_stop": len(after), "passing_after_stop": sum(bool(p) for _, p in after),
                     "last_pass_after_stop": max((s for s, p in after if p), default=None),
                     "passes_at_end": bool(after[-1][1]) if after else None}
    return out
