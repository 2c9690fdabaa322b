"""What the command line refuses before it builds its parser, which imports every command and torch (2-4 s): a
model argument that names nothing, by the loader's own first check (:func:`headlab.models.sources.check_missing`: a
path that does not exist, a typo of a named model, a hub id neither cached nor reachable). A named model is left to
the command, so that a bad option is refused before a model is asked for, on a machine without the model as on one
with it. Only the words right after the command are read, up to the first option: anything the parser would read
differently is left to the parser and the command, which make the same check again."""

from __future__ import annotations

from typing import Sequence

from headlab.models.registry import NAMED_MODELS
from headlab.models.sources import check_missing

#: command words -> whether it takes several models; a consistency test holds this to the parser's positionals
MODEL_COMMANDS: dict[tuple[str, ...], bool] = {
    ("scan",): False, ("characterize",): False, ("ablate",): False, ("importance",): False, ("prune",): False,
    ("pattern",): False, ("claims",): True, ("languages",): True, ("monitor", "fit"): False,
    ("monitor", "evaluate"): False, ("retrieval", "eval-llm"): False,
}
#: the options the top-level parser takes before a command
GLOBAL_FLAGS = ("--debug",)


def model_arguments(args: Sequence[str]) -> list[str]:
    """The model arguments of ``args`` (a command line without the program's name) that this check reads."""
    rest = list(args)
    while rest and rest[0] in GLOBAL_FLAGS:
        rest.pop(0)
    for words, several in MODEL_COMMANDS.items():
        if tuple(rest[:len(words)]) == words:
            after = rest[len(words):]
            models = []
            for token in after:
                if token.startswith("-"):
                    break
                models.append(token)
            return models if several else models[:1]
    return []


def check(args: Sequence[str]) -> None:
    """Refuse, in one line (a HeadlabError), the first model argument of ``args`` that names nothing."""
    for name in model_arguments(args):
        if name not in NAMED_MODELS:
            check_missing(name)
