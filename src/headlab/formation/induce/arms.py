"""The arms of the active-induction study: each is the base training config with one lever (or two) changed.

Levers (each a documented training option, docs/training.md):

* data: ``[data] slash_share`` raised to ``slash_share`` (the share of training windows that contain `/`);
* aux: ``[induce]`` on ``heads`` with ``weight``, from step 0 to ``stop`` (a share of the run), so that what
  happens after it stops is measured too;
* init: ``[model] init`` (:mod:`headlab.nn.init`).

Arm names: ``plain``, ``data``, ``aux``, ``data+aux``, ``init-<scheme>`` for every scheme but the default.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from headlab.errors import HeadlabError
from headlab.nn.init import INITS


@dataclass
class Levers:
    slash_share: float = 0.5       # the data arm's share of windows with `/`
    heads: list[str] = field(default_factory=lambda: ["1.0"])  # heads the auxiliary loss trains
    weight: float = 1.0            # the auxiliary loss's weight λ
    stop: float = 0.6              # share of the run after which the auxiliary loss stops


def _data(raw: dict[str, Any], lv: Levers, steps: int) -> None:
    raw.setdefault("data", {})["slash_share"] = lv.slash_share


def _aux(raw: dict[str, Any], lv: Levers, steps: int) -> None:
    raw["induce"] = {"heads": list(lv.heads), "weight": lv.weight, "start": 0, "stop": max(1, int(lv.stop * steps))}


def _init(scheme: str) -> Any:
    def change(raw: dict[str, Any], lv: Levers, steps: int) -> None:
        raw.setdefault("model", {})["init"] = scheme
    return change


ARMS: dict[str, list[Any]] = {"plain": [], "data": [_data], "aux": [_aux], "data+aux": [_data, _aux],
                              **{f"init-{s}": [_init(s)] for s in INITS if s != "default"}}


def arm_config(base: dict[str, Any], arm: str, levers: Levers, seed: int) -> dict[str, Any]:
    """The raw training config (TOML tables) of ``arm`` at ``seed``."""
    if arm not in ARMS:
        raise HeadlabError(f"unknown arm {arm!r}; arms: {', '.join(ARMS)}")
    raw = copy.deepcopy(base)
    raw.setdefault("optim", {})["seed"] = seed
    steps = int(raw["optim"].get("steps", 2000))
    for change in ARMS[arm]:
        change(raw, levers, steps)
    return raw
