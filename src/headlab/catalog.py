"""The registries' completeness: ``import headlab`` loads nothing until a name is used, so a registry that a module
fills when it is imported (result kinds, run-folder kinds) is complete only once every module has been imported.
A lookup that must see every kind calls :func:`complete` first; it imports the package once, in ~3 s, the cost
``import headlab`` used to pay up front."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

_done = False


def complete() -> None:
    """Import every module of headlab once (``__main__`` modules excepted: they run the command line)."""
    global _done
    if _done:
        return
    for m in pkgutil.walk_packages([str(Path(__file__).parent)], "headlab."):
        if not m.name.endswith("__main__"):
            importlib.import_module(m.name)
    _done = True
