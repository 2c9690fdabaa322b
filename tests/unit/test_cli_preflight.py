"""The command line refuses a model argument that names no model before it builds its parser (which imports every
command and torch): the check is the loader's own, and its table of commands is the parser's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from headlab.cli.entry import build_parser
from headlab.cli.preflight import MODEL_COMMANDS, model_arguments
from tests.support import leaves


def test_the_commands_checked_are_those_whose_first_argument_is_a_model() -> None:
    """Every command outside `models` whose first positional is `model` or `models` is in the table (several:
    nargs '+'), and no other command is."""
    found = {}
    for path, p in leaves(build_parser()).items():
        pos = [a for a in p._actions if not a.option_strings and a.dest != "help"]
        if not path.startswith("models ") and pos and pos[0].dest in ("model", "models"):
            found[tuple(path.split())] = pos[0].nargs == "+"
    assert found == MODEL_COMMANDS


@pytest.mark.parametrize("args,models", [
    (["scan", "m1", "--corpus", "wiki"], ["m1"]),
    (["--debug", "claims", "a", "b", "--out", "o"], ["a", "b"]),
    (["monitor", "fit", "m", "x"], ["m"]),  # one model; the parser refuses the extra word itself
    (["scan", "--corpus", "wiki", "m"], []),  # an option first: left to the parser
    (["report", "folder"], []),
])
def test_only_the_words_right_after_the_command_are_read(args, models) -> None:
    assert model_arguments(args) == models


@pytest.mark.parametrize("model,said", [("./no/such/model", "does not exist"), ("minilm-l7", "did you mean"),
                                        ("no-such-model-xyz", "unknown model")])
def test_a_model_that_is_nowhere_is_refused_without_importing_torch(model, said) -> None:
    code = ("import sys; from headlab.cli import main; rc = main(['scan', %r, '--out', 'o']); "
            "print(rc, 'torch' in sys.modules, 'headlab.cli.entry' in sys.modules)" % model)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.stdout.split() == ["2", "False", "False"], r.stderr
    assert said in r.stderr and r.stderr.count("\n") == 1
