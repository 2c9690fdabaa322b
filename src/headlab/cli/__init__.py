"""The ``headlab`` command line: the parser and ``main`` (:mod:`.entry`), one module per family of subcommands,
and the option types every subcommand shares (:mod:`.options`)."""

from headlab.cli.entry import build_parser, main

__all__ = ["build_parser", "main"]
