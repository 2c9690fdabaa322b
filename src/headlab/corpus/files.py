"""Read user corpora: .txt, .md, .rst, .jsonl (a ``text`` field) and their .gz, as files or folders."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Iterator

from headlab.corpus.document import Document
from headlab.errors import HeadlabError
from headlab.notices import say

TEXT_SUFFIXES = (".txt", ".md", ".rst", ".text")
SUFFIXES = TEXT_SUFFIXES + (".jsonl",)


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suf in SUFFIXES:
        if name.endswith(suf):
            return "jsonl" if suf == ".jsonl" else "text"
    return None


def _read_bytes(path: Path) -> bytes:
    if path.name.lower().endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            return fh.read()
    return path.read_bytes()


def _decode(path: Path, data: bytes) -> str | None:
    """Text, or None for a binary file (a NUL byte). Bytes that are not UTF-8 become U+FFFD, and how many is
    said: one bad byte does not cost a whole file."""
    if b"\x00" in data[:65536]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        bad = text.count("\ufffd") - data.decode("utf-8", errors="ignore").count("\ufffd")
        say(f"{path}: {bad} byte sequence(s) that are not UTF-8 replaced by U+FFFD")
        return text


def _load(path: Path) -> list[str]:
    try:
        data = _read_bytes(path)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        say(f"skipping {path}: cannot read it ({exc})")
        return []
    text = _decode(path, data)
    if text is None:
        say(f"skipping {path}: binary content")
        return []
    if _kind(path) == "text":
        return [text] if text.strip() else []
    out: list[str] = []
    skipped: list[int] = []  # records that hold no "text" string (empty texts are fine and just yield nothing)
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, RecursionError):  # nesting deeper than the parser's stack is not a record
            say(f"{path}:{i + 1}: not JSON, line skipped")
            continue
        t = rec.get("text") if isinstance(rec, dict) else None
        if not isinstance(t, str):
            skipped.append(i + 1)
        elif t.strip():
            out.append(t)
    if skipped:
        where = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
        say(f"{path}: {len(skipped)} record(s) without a string 'text' field skipped (line {where})")
    return out


def file_documents(spec: str) -> Iterator[Document]:
    """Documents of a file or a folder (recursively, in sorted order). Files of other types are skipped."""
    root = Path(spec).expanduser()
    if not root.exists():
        raise HeadlabError(f"corpus '{spec}' is neither a named source nor an existing file or folder")
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    if root.is_file() and _kind(root) is None:
        raise HeadlabError(f"corpus file {root} is not .txt, .md, .rst or .jsonl (optionally .gz)")
    for p in paths:
        if _kind(p) is None:
            continue
        yield Document(str(p), lambda p=p: _load(p))
