"""Head detectors, registered by name. Importing this package registers the built-in ones."""

from headlab.detectors import entropy, linked, marked, offset, patterns, sink, token  # noqa: F401  (registration side effect)
from headlab.detectors.base import DETECTORS, Batch, Detector, bind_to, make, prepare_batch, register

DEFAULT_DETECTORS = ("token", "offset", "previous-token", "duplicate-token", "induction", "sink")

__all__ = ["DEFAULT_DETECTORS", "DETECTORS", "Batch", "Detector", "bind_to", "make", "prepare_batch", "register"]
