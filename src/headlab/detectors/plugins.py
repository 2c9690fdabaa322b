"""Detectors from outside the package, found the way pytest finds its plugins.

* A distribution declares detectors under the entry-point group :data:`GROUP` (``headlab.detectors``), one
  entry point per detector, named as the detector is: in ``pyproject.toml``,
  ``[project.entry-points."headlab.detectors"]`` ``punctuation = "mypkg.heads:Punctuation"``. Importing
  :mod:`headlab.detectors` loads every one, so the CLI, the report, the viewer and the monitor know its name,
  label and meaning without an import by the user.
* ``module:Class`` (``--detectors mypkg.heads:Punctuation``) imports one detector on request, without packaging;
  a scan records its registered name, which a later ``report`` or ``view`` shows by its label only where the
  detector is installed (a result file never makes headlab import code).

A plugin that fails to load is left out with one line on stderr (the other detectors still work), and asking for
its name repeats why.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

from headlab.detectors.base import DETECTORS, Detector, register
from headlab.errors import HeadlabError
from headlab.notices import say

GROUP = "headlab.detectors"
#: entry points that could not be loaded: their name -> why
FAILED: dict[str, str] = {}


def discover() -> None:
    """Load and register every detector declared under :data:`GROUP` by an installed distribution."""
    for ep in importlib.metadata.entry_points(group=GROUP):
        where = f"entry point {ep.name} = {ep.value}" + (f" of {ep.dist.name}" if ep.dist is not None else "")
        try:
            cls = adopt(ep.load(), where)
            if cls.name != ep.name:
                raise HeadlabError(f"{where} registers a detector named {cls.name!r}; name the entry point as the "
                                   "detector is named")
        except Exception as exc:  # a broken plugin must not take the built-in detectors down with it
            FAILED[ep.name] = f"{where} failed to load: {exc}"
            say(f"plugin detector {ep.name!r} left out: {FAILED[ep.name]}")


def adopt(obj: Any, where: str) -> type[Detector]:
    """Register ``obj`` (a :class:`Detector` subclass) unless it already is; the class as registered."""
    if not (isinstance(obj, type) and issubclass(obj, Detector)):
        raise HeadlabError(f"{where}: {obj!r:.60} is not a Detector subclass (headlab.Detector)")
    if DETECTORS.get(getattr(obj, "name", None)) is not obj:  # type: ignore[arg-type]
        register(obj)
    return obj


def load(spec: str) -> str:
    """The registered name of the detector that ``spec`` (``module:Class``) names, imported and registered."""
    module, _, attr = spec.partition(":")
    fix = "give --detectors module:Class with the module importable (installed, or on PYTHONPATH)"
    if not module or not attr:
        raise HeadlabError(f"detector {spec!r}: {fix}")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise HeadlabError(f"detector {spec}: cannot load {attr} from {module} ({exc}); {fix}") from exc
    return adopt(obj, f"detector {spec}").name


def resolve(name: str) -> str:
    """A detector's registered name from what a user wrote: a name (``_`` for ``-``), or ``module:Class``."""
    if ":" in name:
        return load(name)
    key = name.replace("_", "-")
    if key in FAILED and key not in DETECTORS:
        raise HeadlabError(f"detector {name}: the plugin {FAILED[key]}")
    return key
