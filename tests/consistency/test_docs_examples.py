"""Every ``headlab`` command line shown in a code block of the README or docs/ is a valid command: it parses
with this version's parser (options exist, values are in range, required ones are given), and the cheap ones
run. The tutorial's steps are executed by tests/integration/test_tutorial.py; the outputs shown beside the
commands come from real runs."""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from headlab.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]
_PREFIX = re.compile(r"^(?:\$ )?(?:[A-Z_]+=\S+ )*(?:\S*/)?(?:headlab|python -m headlab) (?=[a-z])")


def command_lines(text: str) -> list[str]:
    """``headlab ...`` lines of the fenced code blocks (continuations joined, ``#`` comments dropped): the
    examples a reader copies. Inline spans name commands or give synopses (``[--resume]``) and are not run."""
    out = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            for part in re.split(r"\s*(?:&&|;|\|\|)\s*", line.strip()):
                m = _PREFIX.match(part)
                if m:
                    out.append(part[m.end():])
    return out


EXAMPLES = [(p.relative_to(ROOT).as_posix(), line) for p in PAGES for line in command_lines(p.read_text())]


def test_the_docs_show_commands() -> None:
    assert len(EXAMPLES) >= 20 and {"README.md", "docs/monitor.md"} <= {p for p, _ in EXAMPLES}


@contextlib.contextmanager
def installed_plugin() -> Iterator[None]:
    """The plugin docs/guide/own-detector.md installs (``punctuation``), registered as an installed one would be
    while its commands parse, and removed after: a stand-in that cannot score must not outlive the parse."""
    from headlab.detectors import DETECTORS, Detector, register

    class Punctuation(Detector):
        name, summary = "punctuation", "the guide's plugin"

        def score(self, batch):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    if "punctuation" in DETECTORS:
        yield
        return
    register(Punctuation)
    try:
        yield
    finally:
        DETECTORS.pop("punctuation", None)


@pytest.mark.parametrize("page,line", EXAMPLES, ids=[f"{p}:{i}" for i, (p, _) in enumerate(EXAMPLES)])
def test_every_shown_command_parses(page: str, line: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = shlex.split(line, comments=True)
    plugin = installed_plugin() if page == "docs/guide/own-detector.md" else contextlib.nullcontext()
    with plugin:
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            if exc.code:
                pytest.fail(f"{page}: `headlab {line}` does not parse: {capsys.readouterr().err.strip()}")


#: commands cheap enough to run here, output redirected into the test's folder
CHEAP = ("stimuli", "retrieval generate", "models list", "models families")


@pytest.mark.parametrize("page,line", [(p, l) for p, l in EXAMPLES if l.startswith(CHEAP)])
def test_cheap_shown_commands_run(page: str, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from headlab.cli import main

    argv = shlex.split(line, comments=True)
    if "--out" in argv:
        i = argv.index("--out") + 1
        argv[i] = str(tmp_path / Path(argv[i]).name)
    assert main(argv) == 0, f"{page}: `headlab {line}`: {capsys.readouterr().err.strip()}"
    if "--out" in argv:
        assert Path(argv[argv.index("--out") + 1]).stat().st_size > 0
