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

from headlab.attention.routes import AUTO, DEFAULT_BLOCK_MB, ROUTES
from headlab.census.stats import SDH
from headlab.corpus.records import ID_FIELD, TEXT_FIELD, text_field_problem
from headlab.corpus.samples import ANY, FILTERS
from headlab.detectors import DEFAULT_DETECTORS, DETECTORS, Detector
from headlab.detectors.offset import OFFSET, OffsetOptions
from headlab.detectors.plugins import resolve
from headlab.detectors.token import TokenOptions
from headlab.settings import Settings, dtype_setting, setting
from headlab.values import items

#: constructed stimuli a scan can read instead of a corpus
STIMULI = ("repeat",)
#: scans of more samples than this checkpoint every :data:`CHECKPOINT_EVERY` samples unless told otherwise
CHECKPOINT_ABOVE, CHECKPOINT_EVERY = 4096, 2048


#: offsets the offset detector scores by default (Δ = 0..8)
DEFAULT_MAX_OFFSET = OFFSET.max_offset


@dataclass(frozen=True)
class ScanSettings(Settings):
    """What a scan measures and how: detectors (names or instances), the token detector's ``target`` / ``bare`` /
    ``queries``, the offset detector's ``max_offset``, the SDH rule (``threshold`` θ, ``consecutive`` k), the
    sample stream (``max_samples``: None for all; ``max_length`` windows ``stride`` apart; ``seed``;
    ``target_filter``; ``id_field`` names a JSONL record), and the budgets (``batch_size``, capture ``route``,
    ``chunk_mb`` per block, ``checkpoint_every`` samples: None for the default, 0 for never); ``dtype`` of the
    weights when the scan loads the model."""

    FAMILY: ClassVar[str] = "scan"
    LISTS: ClassVar[tuple[str, ...]] = ("detectors",)

    detectors: tuple[str | Detector, ...] = setting(DEFAULT_DETECTORS, "detectors to run: registered names (plugins "
                                                    "included) or module:Class for one of your own",
                                                    choices=lambda: sorted(DETECTORS), item=resolve,
                                                    annotation="Sequence[str | Detector]")
    target: str = TokenOptions.field_of("target")
    bare: bool = TokenOptions.field_of("bare")
    queries: str = TokenOptions.field_of("queries")
    max_offset: int = OffsetOptions.field_of("max_offset")
    threshold: float = setting(SDH.threshold, "SDH rule θ: mass on the target above it")
    consecutive: int = setting(SDH.consecutive, "SDH rule k: consecutive samples with the target")
    max_samples: int | None = setting(512, "stop after N samples (0: the whole corpus)")
    batch_size: int = setting(8, "samples per forward pass")
    max_length: int = setting(128, "window length in tokens")
    stride: int | None = setting(None, "window stride in tokens (default: no overlap)")
    seed: int = setting(0, "sample order seed")
    target_filter: str = setting(ANY, "keep samples with or without the target", flag="filter", choices=FILTERS)
    route: str = setting(AUTO, "capture route: auto (the faster of eager and fused, or chunked where fused cannot "
                         "serve, timed once per batch shape and cached where a scan has enough batches of it, "
                         "else chosen by window length), or force one; the route used for each shape and why are "
                         "recorded in scan.json", choices=(AUTO, *ROUTES))
    chunk_mb: float = setting(DEFAULT_BLOCK_MB, "memory budget of one block of the chunked/fused routes, MB")
    checkpoint_every: int | None = setting(
        None, f"write the merged statistics every N samples into --out (default: {CHECKPOINT_EVERY} for scans of "
        f"more than {CHECKPOINT_ABOVE} samples, else never; 0: never)", metavar="N")
    id_field: str | None = setting(ID_FIELD, "the JSONL field that names a record (each record is a document); '' "
                                   "names records by line", metavar="FIELD")
    text_field: str = setting(TEXT_FIELD, "the JSONL field that holds a record's text", metavar="FIELD")
    dtype: str = dtype_setting()
    stimuli: str | None = setting(None, "score constructed stimuli instead of a corpus: repeat (random tokens "
                                  "repeated twice, TransformerLens's induction probe), --max-samples of them, "
                                  "--max-length tokens each; the induction score averages every query, both "
                                  "copies, so it is about half the TransformerLens tutorial's, which averages the "
                                  "second copy only", choices=(None, *STIMULI))

    def __post_init__(self) -> None:
        if self.max_samples == 0:  # the CLI's "0: the whole corpus"
            object.__setattr__(self, "max_samples", None)
        dets = items(self.detectors)  # one name is one detector, not its letters; a name is spelled as registered
        if dets is not None:
            object.__setattr__(self, "detectors", tuple(resolve(d) if isinstance(d, str) else d for d in dets))
        super().__post_init__()

    def more_problems(self) -> list[str]:
        out = [] if self.detectors else ["no detector selected (--detectors)"]
        if not isinstance(self.target, str) or not self.target:
            out.append(f"--target {self.target!r}: give a non-empty string")
        if self.stimuli is not None and self.max_samples is None:
            out.append(f"--stimuli {self.stimuli}: give --max-samples N (how many stimuli; 0 means a whole corpus)")
        out += [p for p in [text_field_problem(self.text_field)] if p]
        if self.id_field is not None and not isinstance(self.id_field, str):
            out.append(f"--id-field {self.id_field!r}: give a field name ('' or None: name records by line)")
        # each offset is a column per head: 10**7 of them asked 276 GB; the default is never the one refused
        if self.max_offset > max(self.max_length, DEFAULT_MAX_OFFSET):
            out.append(f"--max-offset {self.max_offset}: a window of --max-length {self.max_length} tokens has "
                       f"offsets 0..{self.max_length - 1}; give at most {self.max_length}")
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


@dataclass(frozen=True)
class TopSettings(Settings):
    """What ``headlab top`` lists from a scan's per-sample scores: the ``k`` samples ranked by ``detector``'s
    score, their texts decoded with ``model``'s tokenizer (None: the scan's model)."""

    FAMILY: ClassVar[str] = "top"

    detector: str = setting("token", "the detector whose score ranks the samples")
    k: int = setting(20, "samples listed")
    model: str | None = setting(None, "tokenizer for the text (default: the scan's model)")


TOP = TopSettings()
