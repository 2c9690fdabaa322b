"""Head detectors, registered by name. Importing this package registers the built-in ones, then every plugin
an installed distribution declares (:mod:`headlab.detectors.plugins`)."""

from headlab.detectors import entropy, linked, marked, offset, patterns, sink, token  # noqa: F401  (registration side effect)
from headlab.detectors.base import DETECTORS, Batch, Detector, bind_to, make, prepare_batch, register
from headlab.detectors.plugins import discover

DEFAULT_DETECTORS = ("token", "offset", "previous-token", "duplicate-token", "induction", "sink")

__all__ = ["DEFAULT_DETECTORS", "DETECTORS", "Batch", "Detector", "bind_to", "make", "prepare_batch", "register"]

discover()  # after the names above are bound: a plugin imports them from this package
