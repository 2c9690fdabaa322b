"""The settings of a head-monitor profile, defined once: ``headlab monitor fit`` and its Python twin take their
defaults from :data:`MONITOR`, the profile records :meth:`~headlab.settings.Settings.record`, and ``check`` scores
with the same windowing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from headlab.corpus.records import ID_FIELD, TEXT_FIELD, text_field_problem
from headlab.detectors import DEFAULT_DETECTORS, DETECTORS
from headlab.detectors.plugins import resolve
from headlab.monitor import anomalies
from headlab.settings import Settings, dtype_setting, setting
from headlab.values import ITEM_BYTES, Rule

#: the monitor's detectors by default: the census defaults plus every head's attention entropy
MONITOR_DETECTORS = (*DEFAULT_DETECTORS, "entropy")
#: real kinds and the named corpus each one reads; derived kinds are built from fresh reference prose
REAL = {"code": "pysrc", "docstrings": "pydoc", "python-doc": "python-doc", "markup": "python-html", "man": "man",
        "linux-doc": "linux-doc", "man-de": "man-de", "man-fr": "man-fr", "man-ja": "man-ja", "man-zh": "man-zh"}
DERIVED = tuple(anomalies.KINDS)
KINDS = (*REAL, *DERIVED)
#: reference windows a profile needs at the least: every fifth document (by its name's hash) calibrates the
#: threshold and at least 10 must, so 50 windows of 50 documents held 10 about half the time (the wiki corpus's first
#: 50: 7, refused after the scan); 100 hold fewer than 10 with a binomial probability under 1% (corpora of long
#: documents, several windows each, may still need more, and are told so after the scan)
MIN_REFERENCE = 100
#: windows between the checkpoints of a ``monitor check`` with a result folder (about a minute of CPU work on
#: the packaged models, so an interrupt loses little and checkpoints cost little)
CHECKPOINT_EVERY = 512
#: the check's scan folder inside its result folder, kept for ``--resume`` until the result is written
WORK = ".check-scan"


@dataclass(frozen=True)
class MonitorSettings(Settings):
    """The reference ``corpus`` (up to ``max_samples`` windows of ``max_length`` tokens, drawn with ``seed``),
    the features (each of ``detectors``' top ``per_detector`` heads, and every head's entropy), the
    calibrated false-positive rate ``fpr`` on held-out reference documents, ``batch_size``, and ``id_field``, the
    JSONL field that names a record (every record is a document), and the ``dtype`` the model's weights are
    loaded in (a profile's features are its heads' numbers in that dtype, so ``check`` loads the model in it)."""

    FAMILY: ClassVar[str] = "monitor"
    LISTS: ClassVar[tuple[str, ...]] = ("corpus", "detectors")

    corpus: tuple[str, ...] = setting(("wiki",), "reference text: named sources or files/folders", metavar="SRC",
                                      paths=True, annotation="Sequence[str]")
    detectors: tuple[str, ...] = setting(MONITOR_DETECTORS, "detectors whose heads make the fingerprint: registered "
                                         "names (plugins included) or module:Class", choices=lambda: sorted(DETECTORS),
                                         item=resolve, annotation="Sequence[str]")
    max_samples: int = setting(2000, "reference windows scanned", rule=Rule("whole", MIN_REFERENCE))
    per_detector: int = setting(8, "heads per detector in a fingerprint")
    fpr: float = setting(0.01, "share of reference documents flagged (above 0, at most 0.5)")
    seed: int = setting(0, "random seed (sample order)")
    batch_size: int = setting(8, "samples per forward pass")
    max_length: int = setting(128, "window length in tokens", cli=False)
    id_field: str | None = setting(ID_FIELD, "the JSONL field that names a record (each record is a document); '' "
                                   "names records by line", metavar="FIELD")
    text_field: str = setting(TEXT_FIELD, "the JSONL field that holds a record's text", metavar="FIELD")
    dtype: str = dtype_setting()

    def __post_init__(self) -> None:
        named = self.detectors if isinstance(self.detectors, (list, tuple)) else None
        if named is not None:  # a plugin named in Python as in the CLI: module:Class, or its registered name
            object.__setattr__(self, "detectors", tuple(resolve(d) if isinstance(d, str) else d for d in named))
        super().__post_init__()

    def more_problems(self) -> list[str]:
        out = [] if self.corpus else ["--corpus: give at least one reference source"]
        out += [] if self.detectors else ["--detectors: give at least one detector"]
        out += [p for p in [text_field_problem(self.text_field)] if p]
        fpr, n = self.fpr, self.max_samples
        if isinstance(fpr, (int, float)) and not 0 < fpr <= 0.5:
            out.append(f"--fpr {fpr}: give a false-positive rate above 0 and at most 0.5, e.g. 0.01")
        if isinstance(n, int) and n < MIN_REFERENCE:
            out.append(f"--max-samples {n}: a profile needs at least {MIN_REFERENCE} reference windows (a fifth of "
                       "the documents, at least 10, is held out to calibrate it)")
        return out


#: a profile fitted with no options
MONITOR = MonitorSettings()


@dataclass(frozen=True)
class EvaluateSettings(Settings):
    """The monitor's evaluation: a profile of ``reference`` (``max_samples`` windows; ``per_detector`` and
    ``fpr`` as a profile's) against attention-free baselines on ``kind_samples`` windows of each of ``kinds``
    (None: every kind whose corpus is installed); ``seed``, ``batch_size``, the reference's ``id_field`` and
    ``text_field``, the weights' ``dtype``."""

    FAMILY: ClassVar[str] = "monitor evaluate"
    LISTS: ClassVar[tuple[str, ...]] = ("reference", "kinds")

    reference: tuple[str, ...] = setting(("wiki",), "corpus sources of the reference profile", metavar="SRC",
                                         paths=True, annotation="Sequence[str]")
    kinds: tuple[str, ...] | None = setting(None, "kinds of structure to detect (default: every kind whose corpus "
                                            "is installed)", choices=KINDS, annotation="Sequence[str] | None")
    max_samples: int = setting(3000, "reference windows scanned", rule=Rule("whole", MIN_REFERENCE))
    kind_samples: int = setting(200, "windows per kind", rule=Rule("whole", 1, each=ITEM_BYTES))
    per_detector: int = setting(MONITOR.per_detector, "heads per detector in a fingerprint")
    fpr: float = setting(MONITOR.fpr, "share of reference documents flagged (above 0, at most 0.5)")
    seed: int = setting(MONITOR.seed, "random seed (sample order, folds)")
    batch_size: int = setting(MONITOR.batch_size, "samples per forward pass")
    id_field: str | None = setting(MONITOR.id_field, "the JSONL field that names a record (each record is a "
                                   "document); '' names records by line", metavar="FIELD")
    text_field: str = setting(MONITOR.text_field, "the JSONL field that holds a record's text", metavar="FIELD")
    dtype: str = dtype_setting()

    def more_problems(self) -> list[str]:
        out = [] if self.reference else ["--reference: give at least one reference source"]
        out += [p for p in [text_field_problem(self.text_field)] if p]
        if isinstance(self.fpr, (int, float)) and not 0 < self.fpr <= 0.5:
            out.append(f"--fpr {self.fpr}: give a false-positive rate above 0 and at most 0.5, e.g. 0.01")
        return out


#: evaluate given no options
EVALUATE = EvaluateSettings()


@dataclass(frozen=True)
class CheckSettings(Settings):
    """What ``headlab monitor check`` reads of the corpus: up to ``max_samples`` windows (0: every document), in
    ``seed``'s order, ``batch_size`` at a time, records named by ``id_field``; a checkpoint every
    ``checkpoint_every`` windows when it has a folder. (The windows' length and the weights' dtype are the
    profile's.)"""

    FAMILY: ClassVar[str] = "monitor check"

    max_samples: int = setting(0, "windows to score (0: every document)")
    seed: int = setting(MONITOR.seed, "random seed (sample order)")
    batch_size: int = setting(MONITOR.batch_size, "samples per forward pass")
    id_field: str | None = setting(MONITOR.id_field, "the JSONL field that names a record (each record is a "
                                   "document); '' names records by line", metavar="FIELD")
    text_field: str = setting(MONITOR.text_field, "the JSONL field that holds a record's text", metavar="FIELD")
    checkpoint_every: int = setting(CHECKPOINT_EVERY, "windows between the check's checkpoints",
                                    rule=Rule("whole", 1), metavar="N")

    def more_problems(self) -> list[str]:
        return [p for p in [text_field_problem(self.text_field)] if p]


#: check given no options
CHECK = CheckSettings()
