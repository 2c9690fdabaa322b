"""JSONL corpora record by record: each record is a document, named by its id field (else its line number).

A dataset's unit is the record: the monitor flags records and a scan's per-sample rows name them. One pass over
the file indexes the records (their byte offsets; a ``.gz`` file, which cannot be read from an offset, keeps
its texts instead) so that a record's text is read when the sampler reaches it, not all at once.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Iterator

from headlab.corpus import document
from headlab.corpus.document import Document
from headlab.errors import HeadlabError
from headlab.notices import say

#: the record field that names a record by default; a record without it is named by its line number
ID_FIELD = "id"
#: the record field that holds a record's text by default
TEXT_FIELD = "text"


def text_field_problem(value: object) -> str | None:
    """Why ``--text-field`` cannot name a record's text (an empty name matches no field), or None."""
    return None if value else f"--text-field {value!r}: give the name of the field that holds each record's text"


def record_documents(path: Path, id_field: str | None = ID_FIELD, text_field: str = TEXT_FIELD) -> Iterator[Document]:
    """One document per JSONL record with a string ``text_field``, in file order, named ``PATH#ID`` (or ``PATH:LINE``
    when the record has no ``id_field``, or ``id_field`` is None or empty). Lines that are not JSON and records
    without a string text are skipped and said; two records with one id are refused (a result keyed by id would
    mix them)."""
    zipped = path.name.lower().endswith(".gz")
    try:
        if not zipped:
            with path.open("rb") as fh:
                binary = b"\x00" in fh.read(65536)
            if binary:
                say(f"skipping {path}: binary content")
                return
        index = index_records(path, id_field, zipped, text_field)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        say(f"skipping {path}: cannot read it ({exc})")
        return
    for doc_id, where, _ in index:
        yield Document(doc_id, (lambda t=where: [t]) if zipped
                       else (lambda at=where: _read_record(path, at, text_field)))


def index_records(path: Path, id_field: str | None, zipped: bool,
                  text_field: str = TEXT_FIELD) -> list[tuple[str, Any, int]]:
    """``(name, offset and length, line)`` of every usable record (``(name, text, line)`` for a ``.gz`` file)."""
    out: list[tuple[str, Any, int]] = []
    seen: dict[str, int] = {}
    no_text: list[int] = []
    fields: list[str] = []  # the string fields of the first record without a text
    empty: list[int] = []
    long: list[int] = []
    unnamed = replaced = kept = 0
    offset = 0
    with (gzip.open(path, "rb") if zipped else path.open("rb")) as fh:
        for n, (raw, size) in enumerate(bounded_lines(fh, document.MAX_TEXT_BYTES), 1):
            start, offset = offset, offset + size
            if size > len(raw):  # longer than any text headlab reads: not parsed, so never held
                long.append(n)
                continue
            if zipped and kept > document.MAX_ZIPPED_TEXTS:
                say(f"{path}: only the records up to line {n - 1} are read ({document.MAX_ZIPPED_TEXTS / 2**20:g} "
                    "MiB of text: a .gz file's records stay in memory); decompress it to read every record")
                break
            rec, bad = _parse(raw)
            if rec is None:
                if raw.strip():
                    say(f"{path}:{n}: not JSON, line skipped")
                continue
            replaced += bad
            text = rec.get(text_field) if isinstance(rec, dict) else None
            if not isinstance(text, str):
                no_text.append(n)
                if isinstance(rec, dict) and not fields:  # what the file calls its text, to say so
                    fields = [k for k, v in rec.items() if isinstance(v, str) and k != id_field]
                continue
            if not text.strip():
                empty.append(n)
                continue
            ident = rec.get(id_field) if id_field else None
            if isinstance(ident, (str, int)) and not isinstance(ident, bool) and str(ident):
                name = f"{path}#{ident}"
                if name in seen:
                    raise HeadlabError(f"{path}: records on lines {seen[name]} and {n} share the {id_field} "
                                       f"{ident!r}; give records unique ids, or --id-field '' to name them by line")
                seen[name] = n
            else:
                name, unnamed = f"{path}:{n}", unnamed + 1
            out.append((name, text if zipped else (start, len(raw)), n))
            kept += len(raw)
    if long:
        say(f"{path}: {len(long)} record(s) longer than {document.MAX_TEXT_BYTES / 2**20:g} MiB skipped (line "
            f"{_lines(long)}): more than any scan reads of one text")
    _say_skipped(path, no_text, unnamed if seen else 0, replaced, id_field, fields, text_field)  # no ids: lines
    if empty:
        say(f"{path}: {len(empty)} record(s) with an empty or blank text skipped (line {_lines(empty)})")
    return out


def bounded_lines(fh: Any, limit: int) -> Iterator[tuple[bytes, int]]:
    """Each line of a binary file as ``(bytes, size)``: a line longer than ``limit`` comes back empty with its full
    size, read through in chunks and never held whole."""
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw, len(raw)
            continue
        size = len(raw)
        while not raw.endswith(b"\n"):
            raw = fh.readline(1 << 20)
            if not raw:
                break
            size += len(raw)
        yield b"", size


def _lines(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers[:5])) + (", ..." if len(numbers) > 5 else "")


def _parse(raw: bytes) -> tuple[Any, int]:
    """The JSON value of one line (None if it is not JSON) and how many bytes were not UTF-8; a byte-order mark
    (which some editors put before the first record) is not part of the record."""
    raw = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    text = raw.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - raw.decode("utf-8", errors="ignore").count("\ufffd")
    try:
        return json.loads(text), bad
    except (json.JSONDecodeError, RecursionError):  # nesting deeper than the parser's stack is not a record
        return None, 0


def _say_skipped(path: Path, no_text: list[int], unnamed: int, replaced: int, id_field: str | None,
                 fields: list[str], text_field: str = TEXT_FIELD) -> None:
    if no_text:
        held = f"; the first holds the string field(s) {', '.join(map(repr, fields[:5]))}" if fields else ""
        say(f"{path}: {len(no_text)} record(s) without a string '{text_field}' field skipped (line "
            f"{_lines(no_text)}{held}); name the field that holds the text with --text-field")
    if unnamed:
        say(f"{path}: {unnamed} record(s) without a string or integer '{id_field}' field, named by their line "
            "number")
    if replaced:
        say(f"{path}: {replaced} byte sequence(s) that are not UTF-8 replaced by U+FFFD")


def _read_record(path: Path, at: tuple[int, int], text_field: str = TEXT_FIELD) -> list[str]:
    with path.open("rb") as fh:
        fh.seek(at[0])
        rec, _ = _parse(fh.read(at[1]))
    return [rec[text_field]]


def jsonl_files(spec: str) -> list[Path]:
    """The JSONL files (optionally .gz) of a corpus path: the file itself, or a folder's, in sorted order."""
    root = Path(spec).expanduser()
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    return [p for p in paths if p.name.lower().removesuffix(".gz").endswith(".jsonl")]
