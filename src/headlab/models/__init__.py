"""Models: named offline models, any HF directory or hub id, and the ``headlab models`` commands
(``list``, ``install``, ``check``, ``families``, ``verify``).

Importing this package is light (no torch): its names are loaded when first used, so the command line can check a
model argument (:mod:`headlab.models.sources`) before anything heavy is imported."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from headlab.models.cache import cache_dir
    from headlab.models.commands import check, families, verify
    from headlab.models.commands import list_ as list
    from headlab.models.loaded import LoadedModel, ModelFacts, read_facts
    from headlab.models.loader import DTYPES, load, resolve
    from headlab.models.registry import NAMED_MODELS, NamedModel, install

#: name -> (module, attribute) of every public name
_WHERE = {"cache_dir": ("cache", "cache_dir"), "check": ("commands", "check"), "families": ("commands", "families"),
          "verify": ("commands", "verify"), "list": ("commands", "list_"), "LoadedModel": ("loaded", "LoadedModel"),
          "ModelFacts": ("loaded", "ModelFacts"), "read_facts": ("loaded", "read_facts"),
          "DTYPES": ("loader", "DTYPES"), "load": ("loader", "load"), "resolve": ("loader", "resolve"),
          "NAMED_MODELS": ("registry", "NAMED_MODELS"), "NamedModel": ("registry", "NamedModel"),
          "install": ("registry", "install")}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'headlab.models' has no attribute {name!r}")
    module, attr = _WHERE[name]
    value = getattr(importlib.import_module(f"headlab.models.{module}"), attr)
    globals()[name] = value
    return value


__all__ = ["DTYPES", "LoadedModel", "ModelFacts", "NAMED_MODELS", "NamedModel", "cache_dir", "check", "families",
           "install", "list", "load", "read_facts", "resolve", "verify"]
