"""Models: named offline models, any Hugging Face model, and the architecture facts of each."""

from .cache import cache_dir
from .loaded import LoadedModel, ModelFacts, read_facts
from .loader import load
from .registry import NAMED_MODELS, NamedModel, install

__all__ = ["LoadedModel", "ModelFacts", "NAMED_MODELS", "NamedModel", "cache_dir", "install", "load", "read_facts"]
