"""What a model argument names, checked without torch: a named model that is installed, a path that exists, or a
hub id in the local cache when the hub is offline. The loader makes these checks before any weight is read, and the
command line makes them before it builds its parser (which imports every command and torch), so a typo is refused
at once."""

from __future__ import annotations

import difflib
import functools
import os
import socket
from pathlib import Path

from headlab.errors import HeadlabError
from headlab.models.registry import NAMED_MODELS

#: file suffixes a hub id never ends with: a name with one is a local file
LOCAL_SUFFIXES = (".gguf", ".safetensors", ".bin", ".pt", ".json")


def check_missing(name: str) -> None:
    """Refuse, in one line, a named model that is not installed, a local path that does not exist, a typo of a
    named model, and a hub id that is neither in the local cache nor reachable (offline with HF_HUB_OFFLINE=1, or
    the hub does not answer). A path that exists, and a hub id that may be fetched, are left to the loader."""
    spec = NAMED_MODELS.get(name)
    if spec is not None:
        if not spec.installed():
            raise HeadlabError(f"model '{name}' is not installed; run `headlab models install {name}`")
        return
    if Path(name).expanduser().exists():
        return
    if looks_local(name):
        raise HeadlabError(f"model path {name} does not exist")
    near = difflib.get_close_matches(name, list(NAMED_MODELS), n=1, cutoff=0.8)
    if near:  # a typo of a named model, not a hub id: said at once, not after the hub's retries
        raise HeadlabError(f"unknown model '{name}': did you mean {near[0]}? (`headlab models list` names them; a "
                           "hub id is spelled org/name)")
    if in_hub_cache(name):
        return
    if offline():
        raise HeadlabError(f"unknown model '{name}': not a named model (see `headlab models list`), not a "
                           "directory, and not in the local Hugging Face cache (HF_HUB_OFFLINE=1)")
    if not hub_reachable():
        raise HeadlabError(f"unknown model '{name}': not a named model (see `headlab models list`), not a "
                           "directory, not in the local hub cache, and huggingface.co cannot be reached from here")


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")


def in_hub_cache(repo_id: str) -> bool:
    # deferred: this import loads the hub client (~0.17 s, 112 modules); only hub names need it
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except ValueError:  # not a valid repository id
        return False


@functools.lru_cache(maxsize=1)
def hub_reachable() -> bool:
    """Whether the hub answers at all: offline, its client retries for about half a minute before failing."""
    if offline():
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
        return True
    except OSError:
        return False


def looks_local(name: str) -> bool:
    """A name that can only be a local path (a hub id is ``org/name``): it starts with ``.``, ``/`` or ``~``,
    ends with ``/``, has more than one ``/``, names a model file, or starts with a folder that exists here
    (``runs/mdl`` when ``runs/`` does): refused at once when missing, instead of asking the hub for it."""
    first = name.split("/", 1)[0]
    return (name.startswith((".", "/", "~")) or name.endswith("/") or name.count("/") > 1
            or name.lower().endswith(LOCAL_SUFFIXES) or ("/" in name and Path(first).is_dir()))
