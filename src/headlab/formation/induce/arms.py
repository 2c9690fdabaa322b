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
from dataclasses import dataclass
from typing import Any, ClassVar

from headlab.errors import HeadlabError
from headlab.nn.init import INITS
from headlab.settings import Settings, setting
from headlab.values import Rule


def _data(raw: dict[str, Any], lv: InduceSettings, steps: int) -> None:
    raw.setdefault("data", {})["slash_share"] = lv.slash_share


def _aux(raw: dict[str, Any], lv: InduceSettings, steps: int) -> None:
    raw["induce"] = {"heads": list(lv.heads), "weight": lv.weight, "start": 0, "stop": max(1, int(lv.stop * steps))}


def _init(scheme: str) -> Any:
    def change(raw: dict[str, Any], lv: InduceSettings, steps: int) -> None:
        raw.setdefault("model", {})["init"] = scheme
    return change


ARMS: dict[str, list[Any]] = {"plain": [], "data": [_data], "aux": [_aux], "data+aux": [_data, _aux],
                              **{f"init-{s}": [_init(s)] for s in INITS if s != "default"}}


@dataclass(frozen=True)
class InduceSettings(Settings):
    """The study's design: the ``arms`` trained, at ``seeds``; the levers (the data arm's ``slash_share``; the
    auxiliary loss on ``heads`` with ``weight`` until ``stop`` of the run); ``draws`` matched random heads in each
    run's ablation test."""

    FAMILY: ClassVar[str] = "induce"
    LISTS: ClassVar[tuple[str, ...]] = ("arms", "seeds", "heads")

    arms: tuple[str, ...] = setting(tuple(ARMS), "arms", choices=tuple(ARMS), annotation="Sequence[str]")
    seeds: tuple[int, ...] = setting((0, 1, 2), "seeds", item=int, metavar="SEED", annotation="Sequence[int]")
    heads: tuple[str, ...] = setting(("1.0",), "heads the auxiliary loss trains", metavar="L.H",
                                     annotation="Sequence[str]")
    weight: float = setting(1.0, "the auxiliary loss's weight λ", rule=Rule("positive"))
    stop: float = setting(0.6, "share of the run after which the auxiliary loss stops", rule=Rule("share"))
    slash_share: float = setting(0.5, "the data arm's share of windows with '/'", rule=Rule("share"))
    draws: int = setting(10, "matched random heads in each run's ablation test (0: no ablation)")

    def more_problems(self) -> list[str]:
        found = [] if self.arms else ["--arms: give at least one arm"]
        found += [] if self.seeds else ["--seeds: give at least one seed"]
        return found + [f"--seeds {s!r}: give whole numbers of at least 0" for s in self.seeds or ()
                        if not isinstance(s, int) or isinstance(s, bool) or s < 0][:1]

    def levers(self) -> dict[str, Any]:
        """The levers as the study's record names them."""
        return {"slash_share": self.slash_share, "heads": list(self.heads), "weight": self.weight,
                "stop": self.stop}


#: induce given no options
INDUCE = InduceSettings()


def arm_config(base: dict[str, Any], arm: str, levers: InduceSettings, seed: int) -> dict[str, Any]:
    """The raw training config (TOML tables) of ``arm`` at ``seed``."""
    if arm not in ARMS:
        raise HeadlabError(f"unknown arm {arm!r}; arms: {', '.join(ARMS)}")
    raw = copy.deepcopy(base)
    raw.setdefault("optim", {})["seed"] = seed
    steps = int(raw["optim"].get("steps", 2000))
    for change in ARMS[arm]:
        change(raw, levers, steps)
    return raw
