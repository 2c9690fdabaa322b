"""Models: named offline models, any HF directory or hub id, and the ``headlab models`` commands
(``list``, ``install``, ``check``, ``families``, ``verify``)."""

from headlab.models.cache import cache_dir
from headlab.models.commands import check, families, verify
from headlab.models.commands import list_ as list
from headlab.models.loaded import LoadedModel, ModelFacts, read_facts
from headlab.models.loader import DTYPES, load, resolve
from headlab.models.registry import NAMED_MODELS, NamedModel, install

__all__ = ["DTYPES", "LoadedModel", "ModelFacts", "NAMED_MODELS", "NamedModel", "cache_dir", "check", "families",
           "install", "list", "load", "read_facts", "resolve", "verify"]
