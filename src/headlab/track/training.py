"""Training with the gradient-signal tracker: what ``headlab train`` runs (the Trainer itself knows no analysis)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..train import TrainConfig, Trainer, train
from ..train.data import slash_ids
from ..train.trainer import Callback
from .signals import GradientSignals


def tracked_training(cfg: TrainConfig, run: str | Path, *, resume: bool = False, progress: bool = True,
                     device: str = "cpu", callbacks: Sequence[Callback] = ()) -> Trainer:
    """Train ``cfg`` into ``run`` with the gradient signals written every ``cfg.track.grad_every`` steps."""

    def signals(trainer: Trainer) -> list[Callback]:
        if not trainer.main or cfg.track.grad_every <= 0:
            return []
        tok, pool = trainer.tokenizer, trainer.pool
        return [GradientSignals(trainer.run, cfg.track.grad_every, pool.probe_ids, pool.probe_mask,  # type: ignore[union-attr]
                                slash_ids(tok), cfg.model.kind, cfg.model.mask_id, frozenset(tok.all_special_ids))]

    return train(cfg, run, resume=resume, progress=progress, device=device, callbacks=callbacks, first=signals)
