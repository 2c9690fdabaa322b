"""The ``headlab`` command line: the parser and ``main`` (:mod:`.entry`), one module per family of subcommands,
and the option types every subcommand shares (:mod:`.options`). Importing this package is light: a request for
help that was answered before is printed from :mod:`.helptext`, and a model argument that names no model is refused
by :mod:`.preflight`, without building the parser."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any, Sequence

from headlab.cli import helptext


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # answered without the parser, which imports every command and torch
        print(helptext.version())
        return 0
    text = helptext.cached(args)
    if text is not None:
        sys.stdout.write(text)
        return 0
    if not helptext.is_request(args):
        # deferred past --version and cached help: the check reads the model registry (numpy, ~0.1 s)
        from headlab.cli import preflight
        from headlab.errors import HeadlabError

        try:
            preflight.check(args)
        except HeadlabError as exc:
            print(f"headlab: error: {exc}", file=sys.stderr)
            return 2
    from headlab.cli.entry import main as run  # deferred: it imports every command and torch (2-4 s)

    if not helptext.is_request(args):
        return run(args)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run(args)
    sys.stdout.write(out.getvalue())
    if code == 0:
        helptext.remember(args, out.getvalue())
    return code


def build_parser() -> Any:
    from headlab.cli.entry import build_parser as build  # deferred, as in main

    return build()


__all__ = ["build_parser", "main"]
