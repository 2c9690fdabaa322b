"""The settings of ``headlab view``, declared once (:mod:`headlab.settings`): what shapes the page, beside what
it shows (the source and its texts, which are inputs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from headlab.settings import Settings, dtype_setting, setting
from headlab.views.codec import SCALES


@dataclass(frozen=True)
class ViewSettings(Settings):
    """How maps are stored (``scale``) and the weights' ``dtype`` of a model given by name."""

    FAMILY: ClassVar[str] = "view"

    scale: str = setting("sqrt", "map quantization: sqrt (default; diffuse attention stays visible) or linear "
                         "(about 5x smaller files for long inputs)", choices=SCALES)
    dtype: str = dtype_setting()


VIEW = ViewSettings()
