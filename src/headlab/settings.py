"""A command family's settings, declared once: each field's default, meaning, flag, allowed values and rule.

Everything else is generated from the declaration: the Python twin's keywords (:func:`takes`), the command's
options (``headlab.cli.options.settings_options``), the docs' parameter tables (they read the twin's signature
and the command's help), the result's record (:meth:`Settings.record`) and the one-line refusal of a bad value
(:meth:`Settings.problems`), so a name or a default cannot differ between them.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from collections.abc import Mapping, Set
from typing import Any, Callable, ClassVar, Sequence, TypeVar

from headlab.errors import HeadlabError, annotation_problem
from headlab.values import RULES, Rule, items, repeated

F = TypeVar("F", bound=Callable[..., Any])


def setting(default: Any, help: str, *, flag: str | None = None, metavar: str | None = None,
            choices: Sequence[Any] | Callable[[], Sequence[Any]] | None = None, rule: Rule | None = None,
            item: Callable[[str], Any] = str, paths: bool = False,
            annotation: str | None = None, cli: bool = True) -> Any:
    """One field of a settings dataclass: its ``default`` and ``help`` (the CLI's and the docs' wording); its
    ``flag`` where the CLI spells it other than the field's name; the values allowed (``choices``: a sequence, or a
    function that gives them when they are checked, for a registry that grows after import); its
    ``rule`` where the table's rule of its name (:data:`~headlab.values.RULES`) does not apply; ``item``
    parses one item of a list field on the command line, and ``paths`` says its items may name files or folders
    (then one given by another name, or a copy, is a repeat too); ``annotation`` is what the twin's signature shows
    where the stored type is not what a caller gives (a list kept as a tuple); ``cli=False``: Python only."""
    return dataclasses.field(default=default, metadata={
        "help": help, "flag": flag, "metavar": metavar,
        "choices": choices if choices is None or callable(choices) else tuple(choices),
        "rule": rule, "item": item, "paths": paths, "annotation": annotation, "cli": cli})


def choices_of(meta: Any) -> tuple[Any, ...] | None:
    """A field's allowed values now (a registry's choices are read when they are checked)."""
    found = meta.get("choices")
    return tuple(found()) if callable(found) else found


class Settings:
    """The base of a command family's settings: a frozen dataclass whose fields (declared with :func:`setting`)
    are the family's one set of defaults. Built values are checked at once: every field against its choices and
    its rule (its own, else the table's rule of its name), then the family's own :meth:`more_problems`; the
    first problem is raised as one line naming the option as the CLI spells it. :attr:`LISTS` name fields given
    as a list (one string is one item), kept as tuples."""

    FAMILY: ClassVar[str] = "settings"
    LISTS: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for name in self.LISTS:
            value = getattr(self, name)
            if isinstance(value, (Mapping, Set)):  # its keys, or an order that changes between runs
                raise HeadlabError(f"--{self.flag(name)} {value!r:.40}: give a list")
            object.__setattr__(self, name, None if value is None else tuple(items(value)))
            # a list field pools: seeds, arms, languages, kinds, corpora
            twice = repeated(f"--{self.flag(name)}", value, paths=self.meta(name).get("paths", False))
            if twice:
                raise HeadlabError(twice)
        found = self.problems()
        if found:
            raise HeadlabError(found[0])

    @classmethod
    def fields(cls) -> tuple[dataclasses.Field, ...]:  # type: ignore[type-arg]
        return dataclasses.fields(cls)  # type: ignore[arg-type]

    @classmethod
    def meta(cls, name: str) -> Any:
        """What :func:`setting` declared of the field ``name``."""
        return next(f.metadata for f in cls.fields() if f.name == name)

    @classmethod
    def field_of(cls, name: str) -> Any:
        """The field ``name`` declared again, with its default, help and allowed values, for another settings class
        that gives it (a scan gives each detector its options: ``target = TokenOptions.field_of("target")``)."""
        found = next(f for f in cls.fields() if f.name == name)
        return dataclasses.field(default=found.default, metadata=found.metadata)

    @classmethod
    def flag(cls, name: str) -> str:
        """The field's option as the CLI spells it, without the dashes."""
        return cls.meta(name).get("flag") or name.replace("_", "-")

    def values(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self.fields()}

    def problems(self) -> list[str]:
        """One line for every bad value, naming the option as the CLI spells it: its type first (the one door
        for every field, from the CLI, the twin's keywords or a settings object built by hand), then its value."""
        names = sys.modules[type(self).__module__].__dict__  # where the annotations' names are defined
        out = []
        for f in self.fields():
            value = getattr(self, f.name)
            if (wanted := annotation_problem(str(f.metadata.get("annotation") or f.type), value, names)) is not None:
                out.append(f"--{self.flag(f.name)} {value!r:.40}: {wanted}")
        if out:
            return out
        for f in self.fields():
            value, allowed, rule = getattr(self, f.name), choices_of(f.metadata), f.metadata.get("rule")
            rule = rule or RULES.get(f.name)
            if allowed is not None and f.name not in self.LISTS and value not in allowed:
                out.append(f"--{self.flag(f.name)} {value!r}: choose {', '.join(map(str, allowed))}")
            elif allowed is not None and f.name in self.LISTS and value is not None:
                out += [f"--{self.flag(f.name)} {v!r}: choose {', '.join(map(str, allowed))}"  # an object (a
                        for v in value if isinstance(v, str) and v not in allowed][:1]  # Detector) is its own choice
            elif rule is not None and (found := rule.problem(self.flag(f.name), value)) is not None:
                out.append(found)
        return out + self.more_problems()

    def more_problems(self) -> list[str]:
        return []

    def replace(self, **changes: Any) -> Any:
        known = set(self.values())
        unknown = [k for k in changes if k not in known]
        if unknown:
            raise HeadlabError(f"unknown {self.FAMILY} setting {unknown[0]!r}")
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def record(self) -> dict[str, Any]:
        """The settings as JSON values (tuples as lists), for the result's record."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.values().items()}


#: the dtypes a model's weights can be loaded in, by name (every command's ``--dtype``, every twin's ``dtype=``)
DTYPES = ("float32", "bfloat16", "float16")
#: accelerate's placements of a model over the devices, the CPU and the disk (``headlab.load``'s device_map, the
#: command line's --device-map)
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def dtype_setting() -> Any:
    """The ``dtype`` field: of :class:`RunOptions`, and of every settings class whose result depends on it."""
    return setting("float32", "the weights' dtype (scores and statistics are accumulated in float32)",
                   choices=DTYPES)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a command runs, beside what it measures (its :class:`Settings`): where it writes, whether it may
    replace an earlier result there, its progress bars, the device, the weights' dtype. Declared once here: a
    twin's keyword of one of these names gets its default from :data:`RUN` (:func:`takes_run`, which :func:`takes`
    applies), and the command line's options are made from these fields (``headlab.cli.options.run_options``).
    ``--threads`` and ``--tokenizer`` are process settings the entry point applies, not parameters."""

    out: Any = setting(None, "output folder", annotation="str | Path | None")
    overwrite: bool = setting(False, "replace an earlier result in --out")
    progress: bool = setting(True, "do not show progress bars", flag="no-progress")
    device: str = setting("cpu", "cpu, cuda, cuda:N or auto")
    dtype: str = dtype_setting()


#: the run options' defaults
RUN = RunOptions()
RUN_OPTIONS = tuple(f.name for f in dataclasses.fields(RunOptions))


def takes_run(fn: F | None = None, *, required: Sequence[str] = ()) -> Any:
    """Give a twin's keyword-only run options written without a default (``*, device: str, progress: bool``)
    their :data:`RUN` default in its public signature and in every call; those named in ``required`` stay
    required (a training run's ``out``)."""

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)
        filled = {p.name: getattr(RUN, p.name) for p in sig.parameters.values()
                  if p.kind is p.KEYWORD_ONLY and p.default is p.empty and p.name in RUN_OPTIONS
                  and p.name not in required}
        if not filled:
            return fn

        @functools.wraps(fn)
        def twin(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **{**filled, **kwargs})

        twin.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(default=filled[p.name]) if p.name in filled else p for p in sig.parameters.values()])
        return twin  # type: ignore[return-value]
    return wrap if fn is None else wrap(fn)


def takes(cls: type[Settings], *, required: Sequence[str] = ()) -> Callable[[F], F]:
    """Give a twin written ``def fn(inputs, settings, *, run options)`` the public signature
    ``fn(inputs, *, every field of cls, run options, settings=None)``: a caller names any field as a keyword
    (on top of ``settings``, or of the defaults without it), and ``fn`` receives one checked ``cls``. The
    keywords are the fields themselves, so the twin never repeats a name or a default; its run options get
    theirs from :data:`RUN` (:func:`takes_run`; ``required`` as there)."""
    names = [f.name for f in cls.fields()]

    def wrap(fn: F) -> F:
        fn = takes_run(fn, required=required)
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        at = [p.name for p in params].index("settings")
        declared = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                                      annotation=f.metadata.get("annotation") or f.type) for f in cls.fields()]
        given = inspect.Parameter("settings", inspect.Parameter.KEYWORD_ONLY, default=None,
                                  annotation=f"{cls.__name__} | None")
        public = sig.replace(parameters=[*params[:at], *declared, *params[at + 1:], given])

        @functools.wraps(fn)
        def twin(*args: Any, settings: Settings | None = None, **kwargs: Any) -> Any:
            changes = {k: kwargs.pop(k) for k in names if k in kwargs}
            base = cls() if settings is None else settings
            if not isinstance(base, cls):
                raise HeadlabError(f"settings={base!r:.60}: give a {cls.__name__}")
            return fn(*args, settings=base.replace(**changes) if changes else base, **kwargs)

        twin.__signature__ = public  # type: ignore[attr-defined]
        twin.settings_type = cls  # type: ignore[attr-defined]
        return twin  # type: ignore[return-value]
    return wrap
