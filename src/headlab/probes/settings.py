"""The settings of ``headlab stimuli``, declared once (:mod:`headlab.settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from headlab.settings import Settings, setting


@dataclass(frozen=True)
class StimuliSettings(Settings):
    """A suite's size (``n`` base items; a suite may derive several stimuli from each) and its ``seed``."""

    FAMILY: ClassVar[str] = "stimuli"

    n: int = setting(20, "number of base items")
    seed: int = setting(0, "random seed of the suite")


STIMULI = StimuliSettings()
