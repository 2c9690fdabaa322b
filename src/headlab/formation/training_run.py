"""Training with the gradient-signal tracker and the head monitor: what ``headlab train`` runs (the Trainer
itself knows no analysis)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from headlab.formation.head_monitor import HeadMonitor
from headlab.formation.signals import GradientSignals
from headlab.settings import RUN
from headlab.training import TrainConfig, Trainer, train
from headlab.training.data import slash_ids
from headlab.training.trainer import Callback


def tracked_training(cfg: TrainConfig, run: str | Path, *, resume: bool = False, progress: bool = RUN.progress,
                     device: str = RUN.device, callbacks: Sequence[Callback] = ()) -> Trainer:
    """Train ``cfg`` into ``run`` with the gradient signals written every ``cfg.track.grad_every`` steps and the
    head monitor's rows every ``cfg.monitor.every`` steps."""

    def signals(trainer: Trainer) -> list[Callback]:
        tok, pool = trainer.tokenizer, trainer.pool
        if not trainer.main or pool is None:
            return []
        out: list[Callback] = []
        if cfg.track.grad_every > 0:
            out.append(GradientSignals(trainer.run, cfg.track.grad_every, pool.probe_ids, pool.probe_mask,
                                       slash_ids(tok), cfg.model.kind, cfg.model.mask_id,
                                       frozenset(tok.all_special_ids)))
        if cfg.monitor.every > 0:
            out.append(HeadMonitor(trainer.run, cfg.monitor, pool.probe_ids, pool.probe_mask, tok,
                                   cfg.model.max_length, cfg.model.kind == "decoder", cfg.optim.warmup_steps))
        return out

    return train(cfg, run, resume=resume, progress=progress, device=device, callbacks=callbacks, first=signals)
