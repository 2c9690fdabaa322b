"""headlab: find, test and explain specialized attention heads in Transformers.

Public API (the CLI mirrors it):

    load(name_or_path) -> LoadedModel          named offline models, HF directories, .gguf files, hub ids
    scan(model, texts=None, corpus=...) -> ScanResult   every head scored by every detector, streaming
    capture(model, callback)                   per-layer attention probabilities, one layer at a time
"""

from .capture import capture
from .detectors import DEFAULT_DETECTORS, DETECTORS, Detector
from .detectors import make as make_detector
from .detectors import register as register_detector
from .errors import HeadlabError
from .models import LoadedModel, ModelFacts, load
from .scan import ScanResult, scan

__version__ = "0.1.0"

__all__ = ["DEFAULT_DETECTORS", "DETECTORS", "Detector", "HeadlabError", "LoadedModel", "ModelFacts", "ScanResult",
           "capture", "load", "make_detector", "register_detector", "scan"]
