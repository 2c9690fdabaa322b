"""Argument types that check ranges at parse time, and a parser whose errors are one line (exit 2).

``type=at_least(1)`` makes ``--n -3`` fail before any work with ``headlab retrieval generate: error: argument
--n: -3 is below the minimum 1``; argparse names the option, so each type only says what is allowed.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import sys
from typing import Any, Callable, NoReturn, Sequence

from headlab.distributed import check_threads
from headlab.errors import HeadlabError
from headlab.settings import DEVICE_MAPS, RUN_OPTIONS, RunOptions, choices_of
from headlab.values import RULES


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the message and where to look (usage stays in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def at_least(lo: int) -> Callable[[str], int]:
    """An integer >= ``lo``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum {lo}")
        return value
    parse.__name__ = f"integer >= {lo}"
    return parse


def real_in(lo: float, hi: float | None = None, open_lo: bool = False) -> Callable[[str], float]:
    """A finite number in [lo, hi] (or (lo, hi] with ``open_lo``)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        bad = value != value or value in (float("inf"), float("-inf"))
        if bad or value < lo or (open_lo and value == lo) or (hi is not None and value > hi):
            span = f"{'(' if open_lo else '['}{lo:g}, {'inf)' if hi is None else f'{hi:g}]'}"
            raise argparse.ArgumentTypeError(f"{text} is outside {span}")
        return value
    parse.__name__ = "number"
    return parse


Choices = Sequence[Any] | Callable[[], Sequence[Any]] | None


def items(parse: Callable[[str], Any] = str, choices: Choices = None) -> Callable[[str], list[Any]]:
    """One token of a list option: its comma-separated items, each parsed (and checked against ``choices``, read
    after the parse where they are a registry's: parsing may register an item, a ``module:Class`` detector)."""
    def split(text: str) -> list[Any]:
        out = []
        for raw in (x.strip() for x in text.split(",")):
            if not raw:
                continue
            try:
                value = parse(raw)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{raw!r} is not {getattr(parse, '__name__', 'valid')}") from None
            except HeadlabError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
            allowed = choices() if callable(choices) else choices
            if allowed is not None and value not in allowed:
                raise argparse.ArgumentTypeError(f"{raw!r} is not one of {', '.join(map(str, allowed))}")
            out.append(value)
        return out
    split.__name__ = "list"
    return split


class _Flatten(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, [v for group in values for v in group])


def list_option(p: argparse.ArgumentParser, *flags: str, parse: Callable[[str], Any] = str,
                choices: Choices = None, **kwargs: Any) -> None:
    """A list option, the one syntax of every list: items separated by spaces or commas (``--x a b`` is
    ``--x a,b``), each checked at parse time. ``default`` is a list."""
    if choices is not None and "metavar" not in kwargs:
        kwargs["metavar"] = "{" + ",".join(map(str, choices() if callable(choices) else choices)) + "}"
    p.add_argument(*flags, nargs="+", type=items(parse, choices), action=_Flatten, **kwargs)


def _parse(rule: Any, annotation: str) -> Callable[[str], Any]:
    """The parse-time type of a rule (else of the field's annotation): the command line refuses what the
    settings would refuse, with argparse's one line."""
    if rule is None or rule.kind == "flag":
        kinds = {part.strip() for part in str(annotation).split("|")}
        return float if "float" in kinds else int if "int" in kinds else str
    if rule.kind == "whole":
        return at_least(rule.low)
    if rule.kind == "number":
        return real_in(float("-inf"))
    return real_in(0, 1) if rule.kind == "share" else real_in(0, open_lo=True)


def settings_options(p: argparse.ArgumentParser, cls: Any, skip: Sequence[str] = ()) -> None:
    """Add one option per field of the settings class ``cls`` (:mod:`headlab.settings`), as it declares them:
    flag, help, metavar, choices, list syntax and the parse-time check of its rule. Defaults arrive through
    :func:`bind` from the twin, whose keywords are the same fields."""

    for f in cls.fields():
        meta = f.metadata
        if not meta.get("cli", True) or f.name in skip:
            continue
        # argparse formats help with %: a declared help is plain text
        help_text = meta.get("help")
        flag, kw = "--" + cls.flag(f.name), {"dest": f.name, "help": help_text and help_text.replace("%", "%%")}
        if meta.get("metavar"):
            kw["metavar"] = meta["metavar"]
        if f.name in cls.LISTS:
            list_option(p, flag, parse=meta.get("item", str), choices=meta.get("choices"), **kw)
        elif isinstance(f.default, bool):
            if f.default:
                raise ValueError(f"{cls.__name__}.{f.name}: a flag that is on by default needs a --no- option")
            p.add_argument(flag, action="store_true", **kw)
        else:
            choices = choices_of(meta)  # None in a field's choices is "not set": the option left out
            p.add_argument(flag, type=_parse(meta.get("rule") or RULES.get(f.name), f.type),
                           choices=None if choices is None else [c for c in choices if c is not None], **kw)


#: parameters whose command-line default differs on purpose: the CLI always writes a folder (its default name
#: depends on the model), a Python call writes only when given one; ``progress`` is ``--no-progress``.
CLI_OWN = ("out", "progress")


def bind(p: argparse.ArgumentParser, api: Callable[..., Any], cmd: Callable[[argparse.Namespace], int]) -> None:
    """Make ``cmd`` run ``p``'s command and take every option default from ``api``, the command's Python twin
    (the one place each default is defined)."""

    dests = {a.dest for a in p._actions}
    defaults = {name: prm.default for name, prm in inspect.signature(api).parameters.items()
                if prm.default is not prm.empty and name in dests and name not in CLI_OWN}
    p.set_defaults(func=cmd, api=api, **defaults)


def call(a: argparse.Namespace, **given: Any) -> Any:
    """The command's Python twin (``a.api``) called with the parsed options that are its parameters;
    ``--no-progress`` becomes ``progress``; ``given`` adds or replaces arguments."""

    params = inspect.signature(a.api).parameters
    kwargs = {k: v for k, v in vars(a).items() if k in params}
    if "progress" in params and hasattr(a, "no_progress"):
        kwargs["progress"] = not a.no_progress
    kwargs.update(given)
    return a.api(**kwargs)


def common_options(p: argparse.ArgumentParser, kind: str, seed: bool = True, batch: bool = True,
                   settings: Any = None) -> None:
    """Options every analysis command shares; with ``settings`` (a settings class), its fields first, and of the
    shared ones only those it does not declare."""
    declared = {f.name for f in settings.fields()} if settings is not None else set()
    if settings is not None:
        settings_options(p, settings)
    if seed and "seed" not in declared:
        p.add_argument("--seed", type=int, default=0)
    if batch and "batch_size" not in declared:
        p.add_argument("--batch-size", type=at_least(1), default=8)
    run_options(p, "device")
    threads_option(p)
    run_options(p, *(() if "dtype" in declared else ("dtype",)))
    tokenizer_option(p)
    placement_option(p)
    run_options(p, "out", "overwrite", "progress", out=f"output folder (default runs/{kind}-MODEL)")


def run_options(p: argparse.ArgumentParser, *names: str, out: str | None = None, out_default: str | None = None,
                required: bool = False, overwrite: str | None = None) -> None:
    """Add the run options ``names`` (fields of :class:`headlab.settings.RunOptions`) as their one declaration
    spells them: flag, help, choices and default. What ``--out`` holds differs by command: ``out`` is its help
    here, ``out_default`` the folder it writes without one, ``required`` that it must be given; ``overwrite``
    the help of ``--overwrite`` where it replaces something other than a result in --out."""

    unknown = set(names) - set(RUN_OPTIONS)
    if unknown:
        raise ValueError(f"not run options: {sorted(unknown)}")
    for f in dataclasses.fields(RunOptions):
        if f.name not in names:
            continue
        meta = f.metadata
        flag, help_text = "--" + (meta.get("flag") or f.name), {"out": out, "overwrite": overwrite}.get(f.name)
        kw: dict[str, Any] = {"help": help_text or meta["help"]}
        if isinstance(f.default, bool):
            p.add_argument(flag, action="store_true", **kw)
        elif f.name == "out":
            p.add_argument(flag, default=out_default, required=required, **kw)
        else:
            p.add_argument(flag, default=f.default, choices=choices_of(meta), **kw)


def threads_option(p: argparse.ArgumentParser) -> None:
    """``--threads``: torch's CPU threads for the command, set by the entry point before the work (a process
    setting, not a parameter of the twin: from Python, :func:`headlab.distributed.use_threads`)."""
    p.add_argument("--threads", type=_threads, default=None,
                   help="CPU threads (default: OMP_NUM_THREADS where it is set, else the cores the machine can give "
                        "now, its cores less the load of other work; said at a terminal when it is fewer than the "
                        "cores)")


def _threads(text: str) -> int:
    try:
        return check_threads(at_least(1)(text))
    except HeadlabError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--threads ")) from None


def tokenizer_option(p: argparse.ArgumentParser) -> None:
    """``--tokenizer``: every model the command loads reads its tokenizer from there (a process setting the entry
    point applies, like ``--threads``; from Python, ``headlab.load(..., tokenizer=...)``)."""
    p.add_argument("--tokenizer", dest="tokenizer_source", metavar="SOURCE", default=None,
                   help="read the tokenizer from this named model, folder or hub id instead of the model's own files "
                        "(a folder of weights without them); recorded in the model's name. One whose vocabulary "
                        "is not the model's own is refused")
    p.add_argument("--force-tokenizer", action="store_true",
                   help="use --tokenizer even where its vocabulary is not the model's own (recorded in the name)")


def placement_option(p: argparse.ArgumentParser) -> None:
    """``--device-map`` and ``--max-memory``: every model the command loads is placed over the devices, the CPU
    and the disk (a process setting the entry point applies, like ``--tokenizer``; from Python,
    ``headlab.load(..., device_map=..., max_memory=...)``)."""
    p.add_argument("--device-map", choices=DEVICE_MAPS, default=None,
                   help="spread a model larger than one device, or than memory, over the GPUs, the CPU and the disk "
                        "(accelerate; layers on the disk are read from the checkpoint when they run); replaces "
                        "--device")
    p.add_argument("--max-memory", type=_memory, default=None, metavar="DEV=SIZE,...",
                   help="the cap per device for --device-map, e.g. 0=20GiB,cpu=30GiB (the rest goes to the disk)")


def _memory(text: str) -> dict[int | str, str]:
    """``0=20GiB,cpu=30GiB`` as accelerate's max_memory: a GPU by its index, ``cpu``, or ``mps``."""
    caps: dict[int | str, str] = {}
    for part in filter(None, text.split(",")):
        dev, _, size = part.partition("=")
        dev = dev.strip()
        if not size.strip() or not (dev.isdigit() or dev in ("cpu", "mps")) or not size.strip()[0].isdigit():
            raise argparse.ArgumentTypeError(f"{part!r} is not DEVICE=SIZE (a GPU index, cpu or mps; a size such "
                                             "as 20GiB or 500MB), e.g. 0=20GiB,cpu=30GiB")
        caps[int(dev) if dev.isdigit() else dev] = size.strip()
    if not caps:
        raise argparse.ArgumentTypeError("give at least one DEVICE=SIZE, e.g. cpu=30GiB")
    return caps


def say_wrote(folder: Any, result: Any, extra: str = "") -> None:
    """A command's "wrote" line, naming the files its result class says it writes (never a list typed again)."""
    print(f"wrote {folder}/: {', '.join(result.files())}{extra}")


def default_out(a: argparse.Namespace, kind: str) -> str:
    return a.out or os.path.join("runs", f"{kind}-" + os.path.basename(str(a.model).rstrip("/")))


#: what the options every family shares mean, said once (an option's own help wins)
SHARED_HELP = {
    "seed": "random seed (sample order, draws)",
    "batch_size": "samples per forward pass",
    "model": "a named model (headlab models list), a Hugging Face model directory or hub id, a .gguf file, or a "
             "headlab train run folder",
    "models": "models as for `headlab scan` (named, directories, hub ids, run folders)",
    "corpus": "named corpus sources or files/folders (.txt .md .rst .jsonl, optionally .gz)",
    "draws": "matched random head sets the target is compared with (p cannot go below 1/(draws+1))",
    "samples": "corpus windows scored",
    "window": "window length in tokens",
    "max_samples": "reference windows scanned",
    "id_field": "the JSONL field that names a record (each record is a document); '' names records by line",
    "depth": "chain depth D (hops)",
    "d_model": "model width",
    "steps": "training steps",
    "lr": "peak learning rate (AdamW)",
    "distractors": "distractor chains beside the answer's",
    "positions": "position encoding",
    "name": "a named model (headlab models list)",
    "suite": "stimulus suite",
    "runs": "result folders",
    "head": "a head, L.H",
    "detector": "the detector whose score ranks the samples",
    "k": "samples listed",
    "reference": "corpus sources of the reference profile",
    "form": "text form of the task",
    "n": "items (examples, questions or probe examples)",
    "curricula": "curricula compared",
    "seeds": "seeds per cell",
    "min_mass": "attention mass a role needs",
    "forms": "text forms evaluated",
    "source": "a model, a scan folder, a training run or a retrieval run",
    "title": "the report's title",
}


def complete_help(parser: argparse.ArgumentParser) -> None:
    """Every option of every subcommand says what it is and its default (taken from the option's value, which
    ``bind`` took from the Python twin): the shared wording where the option has none of its own; every command
    has a description (its line in the command list where it has none of its own)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for listed in action._choices_actions:  # a command without its own description says its listed line
                sub = action.choices[listed.dest]
                if sub.description is None and listed.help:
                    sub.description = listed.help[0].upper() + listed.help[1:] + "."
            for sub in action.choices.values():
                complete_help(sub)
            continue
        if action.dest in ("help", "version") or action.help == argparse.SUPPRESS:
            continue
        text = action.help or SHARED_HELP.get(action.dest)
        if not text:
            raise ValueError(f"--{action.dest} has no help text: add one, or to SHARED_HELP")
        default = parser.get_default(action.dest)
        unset = default is None or default is False or default == argparse.SUPPRESS
        if action.option_strings and "default" not in text and not unset:
            shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else default
            text += f" (default: {shown})".replace("%", "%%")  # argparse formats help with %
        action.help = text
