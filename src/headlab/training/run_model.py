"""A ``headlab train`` run folder as a model: its config, its tokenizer and the weights of one checkpoint or of
``final.safetensors``. Registered as a folder kind of :func:`headlab.load`, so any command that takes a model takes
a run folder."""

from __future__ import annotations

from pathlib import Path

from headlab.errors import HeadlabError
from headlab.models.loaded import LoadedModel
from headlab.models.loader import FolderKind, register_folder_kind
from headlab.nn import Transformer, as_loaded
from headlab.nn.tokenizer import load_tokenizer
from headlab.training import checkpoint as ckpt
from headlab.training.config import load_config


def is_training_run(folder: Path) -> bool:
    """A run folder: its resolved config, and no Hugging Face ``config.json``."""
    return (folder / "config.toml").exists() and not (folder / "config.json").exists()


def check_finished(run: Path) -> None:
    if not (run / "final.safetensors").exists():
        raise HeadlabError(f"training run {run} has no final.safetensors (not finished?); finish it with "
                           f"headlab train CONFIG --out {run} --resume")


def load_checkpoint_model(run: Path, folder: Path | None) -> LoadedModel:
    """A run's model with the weights of ``folder`` (a checkpoint) or ``final.safetensors``, as a LoadedModel."""
    cfg = load_config(run / "config.toml")
    model = Transformer(cfg.model)
    if folder is None:
        ckpt.load_weights_file(run / "final.safetensors", model, f"{run.name} final weights")
    else:
        ckpt.load_weights(folder, model)
    name = f"{run.name}@{folder.name if folder else 'final'}"
    return as_loaded(model, load_tokenizer(run / "tokenizer"), name, source=str(folder or run))


TRAINING_RUN = register_folder_kind(FolderKind("training run", is_training_run, check_finished,
                                               lambda run: load_checkpoint_model(run, None)))
