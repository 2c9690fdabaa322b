"""Training small Transformers from scratch (``headlab train``): config, data, checkpoints, the Trainer."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .config import TrainConfig, from_dict, load_config
from .trainer import Callback, Trainer, lr_at


def train(cfg: TrainConfig, run: str | Path, *, resume: bool = False, progress: bool = True,
          device: str = "cpu", callbacks: Sequence[Callback] = ()) -> Trainer:
    """Train ``cfg`` into the run folder ``run`` with the gradient-signal tracker; returns the finished Trainer."""
    from ..track.signals import GradientSignals
    from .data import slash_ids

    trainer = Trainer(cfg, run, resume=resume, progress=progress, device=device, callbacks=callbacks)
    if trainer.main and cfg.track.grad_every > 0:
        tok = trainer.tokenizer
        trainer.callbacks.insert(0, GradientSignals(
            trainer.run, cfg.track.grad_every, trainer.pool.probe_ids, trainer.pool.probe_mask, slash_ids(tok),
            cfg.model.kind, cfg.model.mask_id, frozenset(tok.all_special_ids)))
    try:
        trainer.fit()
    finally:
        for cb in trainer.callbacks:
            close = getattr(cb, "close", None)
            if close:
                close()
    return trainer


__all__ = ["TrainConfig", "Trainer", "from_dict", "load_config", "lr_at", "train"]
