"""Training small Transformers from scratch (``headlab train``): config, data, checkpoints, the Trainer."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from headlab.training import run_model as _run_model  # noqa: F401  (registers run folders with headlab.load)
from headlab.training.config import TrainConfig, from_dict, load_config
from headlab.training.trainer import Callback, Trainer, lr_at


def train(cfg: TrainConfig, run: str | Path, *, resume: bool = False, progress: bool,
          device: str, callbacks: Sequence[Callback] = (),
          first: Callable[[Trainer], list[Callback]] | None = None) -> Trainer:
    """Train ``cfg`` into the run folder ``run``; returns the finished Trainer. ``first(trainer)`` builds callbacks
    that need the prepared trainer (its data pool, tokenizer) and run before ``callbacks``; every callback's
    ``close`` is called at the end, also after an interruption."""
    trainer = Trainer(cfg, run, resume=resume, progress=progress, device=device, callbacks=callbacks)
    if first is not None:
        trainer.callbacks[:0] = first(trainer)
    try:
        trainer.fit()
    finally:
        for cb in trainer.callbacks:
            close = getattr(cb, "close", None)
            if close:
                close()
    return trainer


__all__ = ["TrainConfig", "Trainer", "from_dict", "load_config", "lr_at", "train"]
