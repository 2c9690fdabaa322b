"""Pre-registration by code: what data existed when each rule was declared.

``declared.json`` (beside this module, so an installed headlab carries it) holds, per rule, the rule-book version
and fingerprint it was declared under, the sha256 of every committed file its ``data`` globs matched then, and the
digest of the statistics of every committed verdict of that rule then. ``headlab verdicts --record`` writes it in a
rule's own commit, before it re-judges anything: a rule whose fingerprint is new or changed is declared again, on
the data that exists at that moment; a rule whose fingerprint is unchanged keeps its declaration.

A verdict is exploratory when its statistics, or one of the files they were computed from, existed at its rule's
declaration, or when it judges data whose identity existed then: what produced the data (the ``produced_from`` of
its result kind: the model, the corpus and its seed, the settings; a training run's recipe and seed), not its
bytes, so a rerun of a declared experiment stays exploratory however its files differ. A declaration records the
identities of every result under results/ that declares them; a verdict is judged under the identity of its data by
:func:`judged_as_produced`. A rule that has no declaration at all is exploratory on any data. A unit test holds
the declarations to the book's fingerprints, so a rule cannot change without being declared again.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator, Mapping, Protocol

from headlab.catalog import complete
from headlab.errors import HeadlabError
from headlab.io import file_sha256, write_json_atomic
from headlab.result import RESULTS, read_json
from headlab.rulebook import reach

DECLARED = Path(__file__).with_name("declared.json")


@dataclass(frozen=True)
class Declaration:
    """One rule's declaration: the book ``version`` and ``fingerprint`` it was declared under, the ``files`` (path
    under results/ -> sha256) its data globs matched, and the digests of the ``stats`` of its committed verdicts."""

    version: int
    fingerprint: str
    files: dict[str, str]
    stats: tuple[str, ...]
    code: dict[str, str] = field(default_factory=dict)  # what the rule ran then: reach.reached's name -> digest
    #: each committed statistics' parts (key -> digest of its value): statistics holding every part of one of
    #: these are that data, whatever was added beside it
    parts: tuple[dict[str, str], ...] = ()
    #: the identities of the data every result under results/ held then (:func:`identity`)
    identities: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "fingerprint": self.fingerprint, "files": self.files,
                "stats": list(self.stats), "parts": list(self.parts), "identities": list(self.identities),
                "code": self.code}


def _plain(x: Any) -> Any:
    """numpy scalars as Python numbers, so statistics in memory and read back from JSON digest alike."""
    item = getattr(x, "item", None)
    return item() if callable(item) else str(x)


def _canon(stats: Mapping[str, Any]) -> Any:
    """Statistics as JSON would store them (keys as strings, tuples as lists, numpy scalars as numbers)."""
    return json.loads(json.dumps(stats, default=_plain))


def stats_digest(stats: Mapping[str, Any]) -> str:
    """sha256 (16 hex digits) of statistics as JSON would store them."""
    return hashlib.sha256(json.dumps(_canon(stats), sort_keys=True).encode()).hexdigest()[:16]


def stats_parts(stats: Mapping[str, Any]) -> dict[str, str]:
    """Each top-level part of statistics with the digest of its value, as JSON would store it: a field added to
    declared statistics leaves the declared parts in place, and the data is still the declared data."""
    return {str(k): hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()[:16]
            for k, v in _canon(stats).items()}


def file_digest(path: str | Path) -> str:
    """sha256 (16 hex digits) of a file's bytes: what a declaration records, and what ``evidence`` is made of."""
    return file_sha256(path)[:16]


def results_path(root: Path, file: Path) -> str:
    """``file`` under the results folder ``root``, written as the rules' globs name it (``results/...``) whatever
    the folder is called: a copy judged elsewhere writes the same committed text."""
    return "results/" + file.resolve().relative_to(root.resolve()).as_posix()


def read(path: Path = DECLARED) -> dict[str, Declaration]:
    if not path.exists():
        return {}
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {rid: Declaration(d["version"], d["fingerprint"], dict(d["files"]), tuple(d["stats"]),
                             dict(d.get("code", {})), tuple(dict(p) for p in d.get("parts", ())),
                             tuple(d.get("identities", ())))
            for rid, d in raw.items()}


def verdict_rows(obj: Any, out: list[dict[str, Any]]) -> None:
    """Every verdict a result's JSON keeps: the objects with a ``rule`` and a ``verdict``."""
    if isinstance(obj, dict):
        if isinstance(obj.get("rule"), str) and "verdict" in obj:
            out.append(obj)
        for v in obj.values():
            verdict_rows(v, out)
    elif isinstance(obj, list):
        for v in obj:
            verdict_rows(v, out)


def refuse_without_evidence(rows: Iterable[Mapping[str, Any]], where: str) -> None:
    """Refused, in one line naming ``where`` and the rule, when a verdict row states a judgement but keeps no
    statistics to judge it from: only a row that measured nothing ("not measured") has none. A stored verdict
    is never taken as written, so a row without its evidence is not re-labelled either."""
    bare = [r for r in rows if r.get("verdict") != "not measured" and not isinstance(r.get("stats"), Mapping)]
    if bare:
        raise HeadlabError(f"{where}: a {bare[0]['rule']} verdict ({bare[0]['verdict']!r}) keeps no statistics to "
                           f"judge it from{f' (and {len(bare) - 1} more)' if len(bare) > 1 else ''}: a verdict without "
                           "its evidence is not trusted; restore the file, or measure it again with the command that "
                           "made it")


def identity(kind: str, inputs: Mapping[str, Any]) -> str:
    """The identity of data: the result kind that holds it and the inputs it was produced from (sha256, 16 hex
    digits, prefixed ``id:`` so it is never taken for a file's digest)."""
    return "id:" + hashlib.sha256(json.dumps([kind, _canon(inputs)], sort_keys=True).encode()).hexdigest()[:16]


def identities(kind: str, doc: Mapping[str, Any]) -> list[str]:
    """The identities of the data in a document of result ``kind`` (none for a kind that declares none)."""
    said = getattr(RESULTS.get(kind), "produced_from", None)
    return [identity(kind, i) for i in said(dict(doc))] if said is not None else []


def identities_of_files(root: Path, files: Iterable[Path], kind: str,
                        memo: dict[Path, list[str]] | None = None) -> frozenset[str]:
    """The identities of the results of ``kind`` that hold ``files``: for each file, the nearest folder from it up
    to ``root`` that has a ``kind`` file (a run's folder holds its summary, analysis and evaluations). ``memo``
    keeps each folder's identities for the next call (several rules read the same runs)."""
    root, out, memo = root.resolve(), set(), {} if memo is None else memo
    for f in files:
        for folder in Path(f).resolve().parents:
            if not folder.is_relative_to(root):
                break
            if (folder / kind).is_file():
                if folder not in memo:
                    memo[folder] = _identities_in(folder / kind, kind)
                out.update(memo[folder])
                break
    return frozenset(out)


def _identities_in(path: Path, kind: str) -> list[str]:
    try:
        return identities(kind, read_json(path))
    except (HeadlabError, KeyError, TypeError, AttributeError):
        return []  # unreadable as its kind: its readers refuse it where it is used


def identities_under(root: Path) -> tuple[str, ...]:
    """Every identity of the data the results under ``root`` hold; a file that cannot be read as its kind adds
    none (the readers refuse it where it is used)."""
    complete()  # every result kind registers when its module is imported
    out: set[str] = set()
    for kind, cls in RESULTS.items():
        if not hasattr(cls, "produced_from"):
            continue
        for path in sorted(root.glob(f"**/{kind}")):
            try:
                out.update(identities(kind, read_json(path)))
            except (HeadlabError, KeyError, TypeError, AttributeError):
                continue
    return tuple(sorted(out))


#: the identities of the data being judged now (:func:`judged_as_produced`): one set for every rule, or a set per
#: rule where one table judges several rules on different data (the retrieval table)
_produced: ContextVar[frozenset[str] | Mapping[str, frozenset[str]]] = ContextVar("headlab_produced",
                                                                                    default=frozenset())


@contextmanager
def produced_from(ids: Iterable[str] | Mapping[str, Iterable[str]]) -> Iterator[None]:
    """Judge under the identities ``ids`` (or, given a mapping, each rule under its own): a rule declared when one
    of them existed reads exploratory."""
    token = _produced.set({r: frozenset(i) for r, i in ids.items()} if isinstance(ids, Mapping) else frozenset(ids))
    try:
        yield
    finally:
        _produced.reset(token)


def _produced_for(rule_id: str) -> frozenset[str]:
    now = _produced.get()
    return now.get(rule_id, frozenset()) if isinstance(now, Mapping) else now


class Rejudged(Protocol):
    KIND: ClassVar[str]

    def to_json(self) -> dict[str, Any]: ...

    def rejudged(self) -> Any: ...


def judged_as_produced(result: Rejudged) -> Any:
    """``result`` judged again by the current rule book under the identity of its data: what every producer and
    ``headlab verdicts`` write, so a verdict's pre-registration follows what produced its data."""
    with produced_from(identities(result.KIND, result.to_json())):
        return result.rejudged()


def judged_from_evidence(result: Rejudged, where: str) -> Any:
    """``result`` as a reader shows it: refused when a verdict keeps no statistics (:func:`refuse_without_evidence`),
    else every verdict judged again from its statistics (:func:`judged_as_produced`), never taken as stored."""
    rows: list[dict[str, Any]] = []
    verdict_rows(result.to_json(), rows)
    refuse_without_evidence(rows, where)
    return judged_as_produced(result)


@lru_cache(maxsize=1)
def declarations() -> dict[str, Declaration]:
    """The committed declarations (read once per process; :func:`declare` clears the cache)."""
    return read()


def is_exploratory(rule_id: str, stats: Mapping[str, Any], evidence: Iterable[str] = ()) -> bool:
    """Whether a verdict of ``rule_id`` on ``stats`` (computed from files of sha256 ``evidence``) judges data
    that existed when the rule was declared."""
    d = declarations().get(rule_id)
    if d is None:
        return True
    seen = set(d.files.values())
    if stats_digest(stats) in d.stats or any(e[:16] in seen for e in evidence):
        return True
    if not _produced_for(rule_id).isdisjoint(d.identities):
        return True
    have = set(stats_parts(stats).items())
    return any(set(p.items()) <= have for p in d.parts)


def declare(fingerprints: Mapping[str, str], data: Mapping[str, tuple[str, ...]],
            committed: Mapping[str, list[Mapping[str, Any]]], root: str | Path, version: int,
            code: Mapping[str, dict[str, str]], path: Path = DECLARED) -> list[str]:
    """Declare again every rule whose fingerprint is new or changed, on the data under ``root`` now: the files its
    ``data`` globs match and its ``committed`` verdicts' statistics, and the ``code`` it runs (kept so that a rule
    whose code moves later can be told what moved). Returns the rules declared."""
    root = Path(root).resolve()
    old = read(path)
    out, renewed = {}, []
    ids = identities_under(root)
    for rid, fp in fingerprints.items():
        if rid in old and old[rid].fingerprint == fp:
            out[rid] = old[rid]
            continue
        files = {results_path(root, f): file_digest(f)
                 for g in data.get(rid, ()) for f in sorted(root.glob(g)) if f.is_file()}
        digests = tuple(sorted({stats_digest(s) for s in committed.get(rid, []) if s}))
        parts = tuple({stats_digest(s): stats_parts(s) for s in committed.get(rid, []) if s}.values())
        out[rid] = Declaration(version, fp, files, digests, dict(code.get(rid, {})), parts, ids)
        renewed.append(rid)
    write_json_atomic(path, {rid: d.to_json() for rid, d in out.items()})
    declarations.cache_clear()
    return renewed


def _glob(pattern: str) -> re.Pattern[str]:
    """A rule's data glob (``**`` any folders, ``*`` within a name) as a pattern over ``results/...`` paths, for
    files that are not on disk to glob."""
    parts = re.split(r"(\*\*/|\*)", pattern)
    body = "".join("(?:.*/)?" if p == "**/" else "[^/]*" if p == "*" else re.escape(p) for p in parts)
    return re.compile("results/" + body)


def tracked_but_missing(root: Path, globs: Iterable[str]) -> list[str]:
    """The files under the results folder ``root`` that its git repository tracks, that a rule's ``globs`` match,
    and that are not there: a declaration made without them would not know their data existed (a folder moved aside
    for the declaration). Empty where ``root`` is not in a git checkout (an installed headlab's copy)."""
    root = root.resolve()
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                             check=True, timeout=30).stdout.strip()
        listed = subprocess.run(["git", "-C", top, "ls-files", "-z", "--", str(root)], capture_output=True,
                                text=True, check=True, timeout=60).stdout.split("\0")
    except (OSError, subprocess.SubprocessError):
        return []
    pats = list(globs)
    out = []
    for name in filter(None, listed):
        path = Path(top) / name
        inside = "results/" + path.relative_to(root).as_posix()
        if not path.exists() and any(_glob(g).fullmatch(inside) for g in pats):
            out.append(inside)
    return out


def moved(fingerprints: Mapping[str, str], code: Mapping[str, dict[str, str]]) -> dict[str, str]:
    """rule -> what moved, for every rule whose fingerprint differs from its declaration's: the first parts of its
    code that changed, were added or removed (:func:`headlab.rulebook.reach.changed`), or its declared text."""
    out = {}
    for rid, fp in fingerprints.items():
        d = declarations().get(rid)
        if d is None:
            out[rid] = "it was never declared"
        elif d.fingerprint != fp:
            parts = reach.changed(d.code, code.get(rid, {})) if d.code else []
            more = f", and {len(parts) - 2} more" if len(parts) > 2 else ""
            out[rid] = ", ".join(parts[:2]) + more if parts else "its declared text or decision changed"
    return out


__all__ = ["DECLARED", "Declaration", "declarations", "declare", "file_digest", "is_exploratory", "moved",
           "stats_digest", "stats_parts", "tracked_but_missing"]
