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
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: every public name and the module it lives in. They load on first use: `import headlab` (and so the command
#: line's parsing of --help) costs no torch import until a name is used.
_WHERE = {
    "models": "headlab.models", "monitor": "headlab.monitor", "retrieval": "headlab.retrieval",
    "TopSamples": "headlab.api.census", "scan": "headlab.api.census", "top": "headlab.api.census",
    "ablate": "headlab.api.experiments", "characterize": "headlab.api.experiments",
    "importance": "headlab.api.experiments", "prune": "headlab.api.experiments", "stimuli": "headlab.api.experiments",
    "TrainedRun": "headlab.api.formation", "induce": "headlab.api.formation", "predict": "headlab.api.formation",
    "track": "headlab.api.formation", "train": "headlab.api.formation",
    "Pattern": "headlab.api.pattern", "pattern": "headlab.api.pattern",
    "ViewerPage": "headlab.api.seeing", "report": "headlab.api.seeing", "view": "headlab.api.seeing",
    "claims": "headlab.api.study", "compare": "headlab.api.study", "languages": "headlab.api.study",
    "scale": "headlab.api.study", "verdicts": "headlab.api.study",
    "capture": "headlab.attention.hooks", "ScanResult": "headlab.census.result",
    "DEFAULT_DETECTORS": "headlab.detectors", "DETECTORS": "headlab.detectors", "Detector": "headlab.detectors",
    "make_detector": "headlab.detectors:make", "register_detector": "headlab.detectors:register",
    "HeadlabError": "headlab.errors", "LoadedModel": "headlab.models", "ModelFacts": "headlab.models",
    "load": "headlab.models", "Report": "headlab.reporting", "RunSummary": "headlab.retrieval.record",
}


def __getattr__(name: str) -> Any:
    import importlib  # deferred: the point of this function is that nothing loads before a name is used

    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'headlab' has no attribute {name!r}")
    module, _, attr = where.partition(":")
    if module == f"headlab.{name}":  # a subpackage exported as itself
        value = importlib.import_module(module)
    else:
        value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


if TYPE_CHECKING:
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

__all__ = ["ablate", "capture", "characterize", "claims", "compare", "DEFAULT_DETECTORS", "Detector", "DETECTORS",
           "HeadlabError", "importance", "induce", "languages", "load", "LoadedModel", "make_detector", "ModelFacts",
           "models", "monitor", "Pattern", "pattern", "predict", "prune", "register_detector", "Report", "report",
           "retrieval", "RunSummary", "scale", "scan", "ScanResult", "stimuli", "top", "TopSamples", "track", "train",
           "TrainedRun", "verdicts", "view", "ViewerPage"]
