"""The command line's help, kept once printed: ``headlab --help`` (or any ``COMMAND --help``) builds the whole
parser, which imports every command's module and torch (4 s here); the text depends only on headlab's code, so it
is stored under the cache folder keyed by the arguments, the version and every source file's size and time, and
printed from there while none of them changes."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Sequence

import headlab
from headlab.io import cache_dir, write_text_atomic

HELP = ("-h", "--help")


def version() -> str:
    """What ``headlab --version`` prints (the parser's ``--version`` prints the same)."""
    return f"headlab {headlab.__version__}"


def is_request(args: Sequence[str]) -> bool:
    """A call that asks for help (argparse prints it and does nothing else; only a call that printed it with exit
    status 0 is kept, under its own arguments)."""
    return any(a in HELP for a in args)


def _key(args: Sequence[str]) -> str:
    h = hashlib.sha256("\0".join([headlab.__version__, *args]).encode())
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    h.update(str(shutil.get_terminal_size().columns).encode())  # argparse wraps to the terminal's width
    return h.hexdigest()[:24]


def _file(args: Sequence[str]) -> Path:
    return cache_dir() / "help" / f"{_key(args)}.txt"


def cached(args: Sequence[str]) -> str | None:
    """The stored help for ``args``, or None (not asked for help, never printed, or the code changed)."""
    if not is_request(args):
        return None
    try:
        return _file(args).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def remember(args: Sequence[str], text: str) -> None:
    """Keep the help just printed; a cache that cannot be written costs the next call its 4 s, nothing else."""
    try:
        write_text_atomic(_file(args), text)
    except OSError:
        pass
