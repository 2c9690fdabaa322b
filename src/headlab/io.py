"""Atomic file output: a result file is either complete or absent, never half-written; and the check, made
before any work starts, that an output folder can take a command's result without silently replacing one."""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import io as _io
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from headlab.errors import HeadlabError, naming
from headlab.notices import say


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: files are created with the user's umask (tempfile.mkstemp alone would leave them 0600).
_FILE_MODE = 0o666 & ~_umask()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file, read in 1 MiB blocks (checkpoints and data pools carry it to detect damage)."""

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _no_dangling_link(p: Path) -> None:
    if p.is_symlink() and not p.exists():
        raise HeadlabError(f"--out {p} is a symbolic link to nothing ({os.readlink(p)}); remove it or choose another "
                           "--out")


def claim_out(out: str | os.PathLike[str], files: Sequence[str], overwrite: bool) -> Path:
    """Check that folder ``out`` can receive ``files`` (this command's result), before the work starts.

    Refuses, in one line each: an ``out`` that is an existing file; a folder that already holds one of
    ``files`` (an earlier result) unless ``overwrite``; a path whose nearest existing folder is not writable.
    """
    p = Path(out).expanduser()
    _no_dangling_link(p)
    if p.exists() and not p.is_dir():
        raise HeadlabError(f"--out {p} is an existing file, not a folder; choose a folder path")
    held = [f for f in files if (p / f).exists()]
    if held and not overwrite:
        raise HeadlabError(f"{p} already holds {held[0]} from an earlier run{_partial(p / held[0])}; pass --overwrite "
                           "(overwrite=True) to replace it, or choose another --out")
    base = p
    while not base.exists():
        base = base.parent
    if not base.is_dir() or not os.access(base, os.W_OK | os.X_OK):
        raise HeadlabError(f"cannot write under {base} (for --out {p}); choose a writable --out")
    _probe(base, p)
    return p


#: the largest result file whose record is read to say that it is partial (a scan.json is kilobytes)
PARTIAL_READ_BYTES = 64 << 20


def _partial(path: Path) -> str:
    """``, a partial one (...)`` where ``path`` is a result an interrupted run wrote, else empty."""
    try:
        if path.suffix != ".json" or path.stat().st_size > PARTIAL_READ_BYTES:
            return ""
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(doc, dict) or doc.get("interrupted") is not True:
        return ""
    by = doc.get("interrupted_by")
    done = doc.get("n_samples")
    return (f", a partial one (interrupted{f' by {by}' if isinstance(by, str) else ''}"
            f"{f' after {done} samples' if isinstance(done, int) else ''})")


def cache_dir() -> Path:
    """``$HEADLAB_CACHE``, default ``~/.cache/headlab``: model copies, route costs, the command line's help."""
    return Path(os.environ.get("HEADLAB_CACHE", Path.home() / ".cache" / "headlab")).expanduser()


def save_tensors(tensors: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """``safetensors.torch.save_file``, with its I/O failures raised as the ``OSError`` they are (safetensors
    reports a full disk as ``SafetensorError: ... (os error 28)``), so the CLI names a full disk as such."""
    from safetensors import SafetensorError  # deferred: only the writers of weights need it
    from safetensors.torch import save_file

    try:
        save_file(tensors, str(path))
    except SafetensorError as exc:
        code = re.search(r"os error (\d+)", str(exc))
        if code is None:
            raise
        raise OSError(int(code.group(1)), os.strerror(int(code.group(1))), str(path)) from exc


#: a result folder needs at least this much free space; below it the disk counts as full before work starts.
MIN_FREE_BYTES = 1 << 20


def _probe(base: Path, out: Path) -> None:
    """A real write under ``base`` (root passes every permission check, a read-only mount fails only here)."""

    free = shutil.disk_usage(base).free
    if free < MIN_FREE_BYTES:
        raise HeadlabError(f"the disk holding {base} is full ({free} bytes free, for --out {out}); free space "
                           "or choose another --out")
    try:
        with tempfile.NamedTemporaryFile(dir=base, prefix=".headlab-probe-") as fh:
            fh.write(b"\0" * 4096)
            fh.flush()
    except OSError as exc:
        raise HeadlabError(f"cannot write under {base} ({exc.strerror or exc}, for --out {out}); "
                           "choose a writable --out") from exc


def claim_file(path: str | os.PathLike[str], overwrite: bool, flag: str = "--out") -> Path:
    """:func:`claim_out` for a single output file (``flag``: the option that names it)."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise HeadlabError(f"{flag} {p} is a folder; give a file path")
    _no_dangling_link(p)
    claim_out(p.parent, [p.name], overwrite)
    return p


def keep_apart(outputs: dict[str, Any], inputs: dict[str, Any]) -> None:
    """Refuse, before the work, an output that is or lies inside one of the command's inputs, or another of its
    outputs (paths resolved, links followed): ``--overwrite`` replaces a result, never the data it read.
    ``outputs`` and ``inputs`` map an option's name to a path (None: not given); an input that is not an
    existing path (a named corpus) is skipped."""
    def real(p: Any) -> Path:
        return Path(p).expanduser().resolve()

    ins = {k: real(v) for k, v in inputs.items() if v is not None and Path(v).expanduser().exists()}
    outs = {k: real(v) for k, v in outputs.items() if v is not None}
    for name, out in outs.items():
        for other, src in ins.items():
            if out == src or src in out.parents:
                raise HeadlabError(f"{name} {outputs[name]} is {'' if out == src else 'inside '}the input {other} "
                                   f"{inputs[other]}; write results elsewhere (--overwrite never replaces an input)")
        for other, dst in outs.items():
            if other != name and (out == dst or dst in out.parents):
                raise HeadlabError(f"{name} {outputs[name]} is {'' if out == dst else 'inside '}{other} "
                                   f"{outputs[other]}; give each output its own place")


def _clean(obj: Any) -> Any:
    """JSON has no NaN: undefined statistics are written as null."""
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with naming(path), os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a JSON-lines log. A torn last line (a process killed while writing it) is dropped with a
    warning; a damaged line anywhere else is an error naming the file and line."""

    p = Path(path)
    lines = p.read_text(encoding="utf-8").splitlines()
    rows = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            if i == len(lines) - 1:
                say(f"{p}: last line is incomplete (a killed run?); ignored")
                break
            raise HeadlabError(f"{p}:{i + 1} is not valid JSON; the log is damaged") from None
    return rows


class AppendLog:
    """A JSON-lines log a training callback appends one row to per measured step; opened on the first row,
    flushed at every checkpoint (``flush``), closed at the end (``close``)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._fh: Any = None

    def write(self, row: dict[str, Any]) -> None:
        if self._fh is None:
            self._fh = open(self.path, "a")
        self._fh.write(json.dumps(row) + "\n")

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> Path:
    return write_text_atomic(path, json.dumps(_clean(obj), indent=2, ensure_ascii=False) + "\n")


#: the key under which a result's JSON keeps the sha256 of the rest of it (:func:`sealed`)
SEAL = "content_sha256"


def _content_digest(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
                          ).hexdigest()


def sealed(obj: dict[str, Any]) -> dict[str, Any]:
    """A JSON object as it will be stored, with the sha256 of its content under :data:`SEAL`: a reader checks it
    (:func:`unsealed`), so a value changed by hand after headlab wrote it is seen, not trusted."""
    doc = json.loads(json.dumps(_clean({k: v for k, v in obj.items() if k != SEAL}), ensure_ascii=False))
    return {**doc, SEAL: _content_digest(doc)}


def unsealed(doc: Any, where: str | os.PathLike[str]) -> Any:
    """``doc`` without its seal; refused in one line, naming ``where``, when its content no longer matches the seal.
    A document that has no seal (written before results were sealed) is returned as it is."""
    if not isinstance(doc, dict) or SEAL not in doc:
        return doc
    rest = {k: v for k, v in doc.items() if k != SEAL}
    if doc[SEAL] != _content_digest(rest):
        raise HeadlabError(f"{where} was changed after headlab wrote it (its content no longer matches its "
                           f"{SEAL}): a result is not trusted as edited; restore it (git checkout) or write it again "
                           "with the command that made it")
    return rest


def write_csv_atomic(path: str | os.PathLike[str], header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:

    buf = _io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if isinstance(v, float) and math.isnan(v) else v for v in row])
    return write_text_atomic(path, buf.getvalue())


@contextlib.contextmanager
def writing(out: str | os.PathLike[str], files: Sequence[str], overwrite: bool) -> Iterator[Path]:
    """:func:`claim_out`, then hold the folder's :class:`FolderLock` for the work, claiming once more under the
    lock (another writer may have finished in between): one writer per result folder, never a silent mix."""
    p = claim_out(out, files, overwrite)
    with FolderLock(p):
        claim_out(p, files, overwrite)
        yield p


@contextlib.contextmanager
def writing_files(paths: Sequence[str | os.PathLike[str] | None], overwrite: bool
                  ) -> Iterator[list[Path | None]]:
    """:func:`claim_file` for each output file given, then hold each one's :class:`FolderLock` for the work,
    claiming once more under the lock: two commands writing one file are refused, never left to replace each
    other's copy or mix their temporary files."""
    with contextlib.ExitStack() as stack:
        files = [None if p is None else claim_file(p, overwrite) for p in paths]
        for f in files:
            if f is not None:
                stack.enter_context(FolderLock(f.parent, f.name))
                claim_file(f, overwrite)
        yield files


class FolderLock:
    """An exclusive lock on a result folder while one process writes it (``DIR/.headlab.lock``, flock).

    A second writer gets a one-line refusal naming the holder's pid instead of mixing its files with the
    first's. The operating system drops the lock when the holder exits, so a killed run leaves no stale lock. A
    finished writer removes the lock file while it still holds the lock, and a new writer checks that the file it
    locked is still the one in the folder, so removing it cannot let two writers in.
    """

    def __init__(self, folder: str | os.PathLike[str], file: str | None = None):
        self.folder = Path(folder)
        # ``file``: lock only that file of the folder (an output file beside others' files, e.g. --write-scores)
        self.name, self.what = (".headlab.lock", self.folder) if file is None else \
            (f".{file}.headlab.lock", self.folder / file)
        self._fh: Any = None
        self._created = False

    def acquire(self) -> "FolderLock":

        self._created = not self.folder.exists()
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / self.name
        while True:
            fh = open(path, "a+")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                fh.close()
                raise HeadlabError(f"{self.what} is being written by {holder}; wait for it to finish or choose "
                                   "another --out") from None
            if path.exists() and os.stat(path).st_ino == os.fstat(fh.fileno()).st_ino:
                break
            fh.close()  # the holder finished and removed the file we opened: lock the folder's new one
        self._fh = fh
        try:
            with naming(path):  # a full disk refuses even the holder's name: said before the work, nothing left
                fh.seek(0)
                fh.truncate()
                fh.write(f"headlab pid {os.getpid()}")
                fh.flush()
        except OSError:
            self.release()
            raise
        return self

    def release(self) -> None:
        if self._fh is not None:
            lock = self.folder / self.name
            lock.unlink(missing_ok=True)  # still holding the lock: a finished folder keeps no lock file
            self._fh.close()  # closing the file drops the flock
            self._fh = None
            if self._created and not any(self.folder.iterdir()):
                self.folder.rmdir()  # a folder made for a run that wrote nothing is not left behind

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def saving(out: str | Path | None, files: Sequence[str], overwrite: bool) -> Iterator[Path | None]:
    """``io.writing`` when ``out`` is given (the folder is checked before the work), else nothing to write."""
    if out is None:
        yield None
        return
    with writing(out, files, overwrite) as folder:
        yield folder
