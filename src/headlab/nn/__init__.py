"""Small Transformers trained from scratch (``headlab.nn``), seen by the analyses as a :class:`LoadedModel`."""

from __future__ import annotations

from typing import Any

from headlab.attention.adapters import adapter_for
from headlab.models.loaded import LoadedModel, ModelFacts
from headlab.nn.tokenizer import load_tokenizer, train_bpe
from headlab.nn.transformer import ModelConfig, Output, Transformer


def facts_of(model: Transformer) -> ModelFacts:
    c = model.cfg
    return ModelFacts(model_type="headlab", n_layers=c.n_layers, n_heads=c.n_heads, n_kv_heads=c.n_heads,
                      head_dim=c.head_dim, causal=c.kind == "decoder",
                      position_encoding=c.positions, max_length=c.max_length,  # type: ignore[arg-type]
                      vocab_size=c.vocab_size, n_params=model.n_params())


def as_loaded(model: Transformer, tokenizer: Any, name: str, source: str = "trained by headlab") -> LoadedModel:
    """Wrap a model (put in eval mode) so scan, detectors, ablation and the tracker can use it."""
    model.eval()
    return LoadedModel(name=name, model=model, tokenizer=tokenizer, facts=facts_of(model), source=source,
                       adapter=adapter_for(model))


__all__ = ["ModelConfig", "Output", "Transformer", "as_loaded", "facts_of", "load_tokenizer", "train_bpe"]
