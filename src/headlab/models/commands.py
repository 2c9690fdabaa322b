"""Python twins of ``headlab models list | install | check | families | verify`` (exported by
:mod:`headlab.models` under the command names: ``headlab.models.list()`` and so on)."""

from __future__ import annotations

import shutil
from typing import Any

from headlab.attention.adapters import families_table
from headlab.errors import in_callers_words
from headlab.models.cache import cache_dir, damage
from headlab.models.inspection import report, skeleton
from headlab.models.loader import check_source
from headlab.models.registry import NAMED_MODELS, install


def list_() -> list[dict[str, Any]]:
    """Each named offline model: name, whether it is installed, download size (MB) and architecture."""

    return [{"name": m.name, "installed": m.installed(), "download_mb": m.download_mb,
             "architecture": m.architecture} for m in NAMED_MODELS.values()]


@in_callers_words
def check(model: str) -> dict[str, Any]:
    """Whether headlab supports ``model`` (named, HF directory or hub id), from its config alone: family,
    capture route, census routes, intervention sites. No weights are read."""

    check_source(model)  # a missing path says so, before any hub-id rule is consulted
    return report(*skeleton(model))


def families() -> str:
    """The supported architecture families as a Markdown table."""

    return families_table()


def verify() -> list[dict[str, Any]]:
    """Every cached model copy compared with the digests written with it; a damaged copy is removed (the next
    load rebuilds it; a damaged copy behind a symbolic link is reported and left). One record per copy: folder,
    ``damage`` (None when sound) and ``removed``."""

    folders = sorted(p for p in (cache_dir() / "models").glob("*") if p.is_dir() and not p.name.endswith(".partial"))
    out = []
    for f in folders:
        why, removed = damage(f, full=True), False
        if why is not None and f.is_symlink():  # the copy lives elsewhere, in a place the user chose
            why += f" (a link to {f.resolve()}: left in place; remove the link to rebuild the copy)"
        elif why is not None:
            shutil.rmtree(f)
            removed = True
        out.append({"folder": str(f), "damage": why, "removed": removed})
    return out


__all__ = ["check", "families", "install", "list_", "verify"]
