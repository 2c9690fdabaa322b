"""headlab: find, test and explain specialized attention heads in Transformers.

Every ``headlab`` command is a function here (or in :mod:`headlab.models`, :mod:`headlab.monitor`,
:mod:`headlab.retrieval` for the grouped commands), with the command's option names and defaults, returning a
typed result that shows itself in a notebook (``_repr_html_``) and gives ``to_pandas()`` where a table is
natural. A command-line run and a Python call run the same code: the CLI parses options into these calls.

    load(name_or_path) -> LoadedModel          named offline models, HF directories, .gguf files, hub ids
    scan(model, texts=None, corpus=...) -> ScanResult   every head scored by every detector, streaming
    characterize / ablate / importance / prune           constructed stimuli, causal tests
    claims / compare / scale / languages                 the cross-model study
    verdicts(results)                          every committed verdict re-judged by the rule book
    train / track / predict / induce                     formation
    view(source) -> ViewerPage / report(run)             seeing it (the viewer shows inline in Jupyter)
    pattern(model, text, "L.H") -> Pattern     one head's (T, T) attention on one text, labelled, drawn inline
    capture(model, callback)                   per-layer attention probabilities, one layer at a time

Example:

    import headlab
    r = headlab.scan("minilm-l6", max_samples=64)
    r                                   # in Jupyter: the top heads of every detector
    r.to_pandas().nlargest(5, "token")  # the heads that give most attention to '/'
"""

# No subpackage shares a command's name (tests/consistency/test_layout.py): `headlab.train` is the function, the
# training code is `headlab.training`, and importing any submodule never replaces a function here.
from headlab import models, monitor, retrieval
from headlab.api.census import TopSamples, scan, top
from headlab.api.experiments import ablate, characterize, importance, prune, stimuli
from headlab.api.formation import TrainedRun, induce, predict, track, train
from headlab.api.pattern import Pattern, pattern
from headlab.api.seeing import ViewerPage, report, view
from headlab.api.study import claims, compare, languages, scale, verdicts
from headlab.attention.hooks import capture
from headlab.census.result import ScanResult
from headlab.detectors import DEFAULT_DETECTORS, DETECTORS, Detector
from headlab.detectors import make as make_detector
from headlab.detectors import register as register_detector
from headlab.errors import HeadlabError
from headlab.models import LoadedModel, ModelFacts, load
from headlab.reporting import Report
from headlab.retrieval.record import RunSummary

__version__ = "0.1.0"

__all__ = ["ablate", "capture", "characterize", "claims", "compare", "DEFAULT_DETECTORS", "Detector", "DETECTORS",
           "HeadlabError", "importance", "induce", "languages", "load", "LoadedModel", "make_detector", "ModelFacts",
           "models", "monitor", "Pattern", "pattern", "predict", "prune", "register_detector", "Report", "report",
           "retrieval", "RunSummary", "scale", "scan", "ScanResult", "stimuli", "top", "TopSamples", "track", "train",
           "TrainedRun", "verdicts", "view", "ViewerPage"]
