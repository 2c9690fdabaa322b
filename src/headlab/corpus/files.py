"""Read user corpora: .txt, .md, .rst (a document per file), .jsonl (a document per record, its ``text`` field) and
their .gz, as files or folders."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterator

from headlab.corpus import document
from headlab.corpus.document import Document
from headlab.corpus.records import ID_FIELD, TEXT_FIELD, record_documents
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
    """At most :data:`MAX_TEXT_BYTES` of the file (a longer one is cut at a character boundary, and said)."""
    limit = document.MAX_TEXT_BYTES
    with (gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb")) as fh:
        data = fh.read(limit + 1)
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and data[cut] & 0xC0 == 0x80:  # not inside a UTF-8 character
        cut -= 1
    say(f"{path}: cut after its first {limit / 2**20:g} MiB (a text longer than any scan reads; split the file "
        "to read the rest)")
    return data[:cut]


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
    """A plain-text file: its whole text (one document)."""
    try:
        data = _read_bytes(path)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        say(f"skipping {path}: cannot read it ({exc})")
        return []
    text = _decode(path, data)
    if text is None:
        say(f"skipping {path}: binary content")
        return []
    return [text] if text.strip() else []


def file_documents(spec: str, id_field: str | None = ID_FIELD, text_field: str = TEXT_FIELD) -> Iterator[Document]:
    """Documents of a file or a folder (recursively, in sorted order): a plain-text file is one document, each
    record of a JSONL file is one (named by ``id_field``, see :func:`~headlab.corpus.records.record_documents`).
    Files of other types are skipped."""
    root = Path(spec).expanduser()
    if not root.exists():
        raise HeadlabError(f"corpus '{spec}' is neither a named source nor an existing file or folder")
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    if root.is_file() and _kind(root) is None:
        raise HeadlabError(f"corpus file {root} is not .txt, .md, .rst or .jsonl (optionally .gz)")
    for p in paths:
        kind = _kind(p)
        if kind == "jsonl":
            yield from record_documents(p, id_field, text_field)
        elif kind == "text":
            yield Document(str(p), lambda p=p: _load(p))
