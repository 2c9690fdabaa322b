"""The settings of one scan, defined once.

:class:`ScanSettings` holds every option that shapes a scan's numbers or its budget, each with its one default.
The ``headlab scan`` command takes its defaults from the Python twin, the twin from here
(``headlab.api.census.scan``); the scan itself, the checkpoint fingerprint and the ``settings`` of ``scan.json``
derive from one instance. Values are checked when it is built, before any model is loaded, with one line that
names the option and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from headlab.attention.routes import DEFAULT_BLOCK_MB, ROUTES
from headlab.census.stats import SDH
from headlab.corpus.records import ID_FIELD
from headlab.detectors import DEFAULT_DETECTORS, DETECTORS, Detector
from headlab.errors import HeadlabError
from headlab.models.loader import DTYPES
from headlab.values import Settings

FILTERS = ("any", "with-target", "without-target")
QUERIES = ("can-see", "all")
#: scans of more samples than this checkpoint every :data:`CHECKPOINT_EVERY` samples unless told otherwise
CHECKPOINT_ABOVE, CHECKPOINT_EVERY = 4096, 2048


@dataclass(frozen=True)
class ScanSettings(Settings):
    """What a scan measures and how: detectors (names or instances), the token detector's ``target`` / ``bare`` /
    ``queries``, the offset detector's ``max_offset``, the SDH rule (``threshold`` θ, ``consecutive`` k), the
    sample stream (``max_samples``: None for all; ``max_length`` windows ``stride`` apart; ``seed``;
    ``target_filter``; ``id_field`` names a JSONL record), and the budgets (``batch_size``, capture ``route``,
    ``chunk_mb`` per block, ``checkpoint_every`` samples: None for the default, 0 for never); ``dtype`` of the
    weights when the scan loads the model."""

    FAMILY: ClassVar[str] = "scan"
    CHOICES: ClassVar[dict[str, tuple[str, tuple[Any, ...]]]] = {
        "queries": ("queries", QUERIES), "target_filter": ("filter", FILTERS), "route": ("route", ("auto", *ROUTES)),
        "dtype": ("dtype", DTYPES)}

    detectors: tuple[str | Detector, ...] = DEFAULT_DETECTORS
    target: str = "/"
    bare: bool = False
    queries: str = "can-see"
    max_offset: int = 8
    threshold: float = SDH.threshold
    consecutive: int = SDH.consecutive
    max_samples: int | None = 512
    batch_size: int = 8
    max_length: int = 128
    stride: int | None = None
    seed: int = 0
    target_filter: str = "any"
    route: str = "auto"
    chunk_mb: float = DEFAULT_BLOCK_MB
    checkpoint_every: int | None = None
    id_field: str | None = ID_FIELD
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.max_samples == 0:  # the CLI's "0: the whole corpus"
            object.__setattr__(self, "max_samples", None)
        dets = self.detectors  # one name is one detector, not its letters
        try:
            object.__setattr__(self, "detectors", (dets,) if isinstance(dets, (str, Detector)) else tuple(dets))
        except TypeError:
            raise HeadlabError(f"--detectors {dets!r}: give detector names") from None
        super().__post_init__()

    def more_problems(self) -> list[str]:
        out = [] if self.detectors else ["no detector selected (--detectors)"]
        out += [f"--detectors: unknown detector '{d}'; registered: {', '.join(sorted(DETECTORS))}"
                for d in self.detectors if isinstance(d, str) and d.replace("_", "-") not in DETECTORS][:1]
        if not isinstance(self.target, str) or not self.target:
            out.append(f"--target {self.target!r}: give a non-empty string")
        if self.id_field is not None and not isinstance(self.id_field, str):
            out.append(f"--id-field {self.id_field!r}: give a field name ('' or None: name records by line)")
        return out

    def every(self, has_folder: bool) -> int:
        """Samples between checkpoints: as asked, else :data:`CHECKPOINT_EVERY` for long scans with a folder."""
        if self.checkpoint_every is not None:
            return self.checkpoint_every
        long = self.max_samples is None or self.max_samples > CHECKPOINT_ABOVE
        return CHECKPOINT_EVERY if has_folder and long else 0

    def sdh_rule(self) -> dict[str, Any]:
        return {"detector": "token", "target": self.target, "bare": self.bare, "threshold": self.threshold,
                "consecutive": self.consecutive}


#: the settings of a scan given no options
DEFAULTS = ScanSettings()
