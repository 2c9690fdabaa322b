"""``headlab`` command line: a thin front over the Python API, one subcommand per public function; each family of
commands registers itself from a module of its own (models, census, experiments, study, formation, monitor,
retrieval, seeing), and this module holds the parser and ``main``.

Errors are one line on stderr and a non-zero exit code; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import traceback
import warnings
from typing import Sequence

from headlab.cli import census, experiments, formation, helptext, models, monitor, retrieval, seeing, study
from headlab.cli.options import Parser, complete_help
from headlab.distributed import use_threads
from headlab.errors import HeadlabError, from_cli
from headlab.interrupts import Terminated, exit_code, sigterm_as_interrupt
from headlab.settings import RUN


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="headlab", description="Find, test and explain specialized attention heads.")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("--version", action="version", version=helptext.version())
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND",
                           title="commands, in the order of the research program")
    # find the model, census its heads, characterize and test them, compare models; then formation, the
    # applications, the retrieval problem, and seeing it
    for add in (models.register, census.register, experiments.register, study.register, formation.register,
                monitor.register, retrieval.register, seeing.register):
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
        with sigterm_as_interrupt(), from_cli(), _tokenizer(getattr(args, "tokenizer_source", None),
                                                                getattr(args, "force_tokenizer", False)), \
                _placement(getattr(args, "device_map", None), getattr(args, "max_memory", None),
                           getattr(args, "device", RUN.device)):
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
            print(f"headlab: error: {os.strerror(exc.errno)} while writing {exc.filename or 'a result'}; {fix}",
                  file=sys.stderr)
            return 2
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"headlab: internal error: {type(exc).__name__}: {msg} (rerun with --debug)", file=sys.stderr)
        return 1
    finally:
        warnings.formatwarning = previous_format


def _tokenizer(source: str | None, force: bool) -> contextlib.AbstractContextManager[None]:
    """``--tokenizer``'s process setting (and ``--force-tokenizer``'s), where it is given."""
    if source is None:
        return contextlib.nullcontext()
    # deferred: the loader imports torch (~1 s), which a command without --tokenizer may never need
    from headlab.models.loader import tokenizer_from

    return tokenizer_from(source, force)


def _placement(device_map: str | None, max_memory: dict[int | str, str] | None, device: str
               ) -> contextlib.AbstractContextManager[None]:
    """``--device-map``'s process setting (and ``--max-memory``'s), where it is given."""
    if device_map is None:
        if max_memory is not None:
            raise HeadlabError("--max-memory caps the devices of --device-map: give --device-map auto as well")
        return contextlib.nullcontext()
    if device != RUN.device:
        raise HeadlabError(f"--device-map places the layers itself: give --device {device} or --device-map, not both")
    # deferred, as in _tokenizer
    from headlab.models.loader import placed_by

    return placed_by(device_map, max_memory)


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
