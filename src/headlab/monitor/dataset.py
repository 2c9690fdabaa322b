"""The monitor's verdicts written back into the dataset: ``--write-filtered`` (the records not flagged, their bytes
unchanged) and ``--write-scores`` (every scored record with its score and flag), so that a check drops into a
data pipeline. Only JSONL corpora have records to write back."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from headlab.corpus import document
from headlab.corpus.records import TEXT_FIELD, bounded_lines, index_records, jsonl_files
from headlab.errors import HeadlabError
from headlab.notices import repeated, say

if TYPE_CHECKING:
    from headlab.monitor.scoring import Verdicts

SCORE_KEY, FLAG_KEY = "headlab_score", "headlab_flag"


def dataset_files(corpus: Sequence[str]) -> list[Path]:
    """The JSONL files of ``corpus``; refused in one line when a source has none (no records to write back)."""

    files = []
    for spec in corpus:
        found = jsonl_files(spec)
        if not found:
            raise HeadlabError(f"--write-filtered/--write-scores need JSONL records; {spec} holds no .jsonl file")
        files += found
    return files


def with_scores(raw: bytes, score: float, flag: bool) -> bytes:
    """A record's own bytes with :data:`SCORE_KEY` and :data:`FLAG_KEY` added before its closing brace, so bytes
    that are not UTF-8 (or any formatting) reach the written copy as they were; a record that already holds
    those keys is written anew with them replaced."""
    added = json.dumps({SCORE_KEY: score, FLAG_KEY: flag})[1:-1].encode()
    body = raw.rstrip()
    rec = json.loads(raw.decode("utf-8", errors="replace").lstrip("\ufeff"))
    if SCORE_KEY in rec or FLAG_KEY in rec or not body.endswith(b"}"):
        return (json.dumps({**rec, SCORE_KEY: score, FLAG_KEY: flag}) + "\n").encode("utf-8")
    inner = body[:-1].rstrip()
    return inner + (b"" if inner.endswith(b"{") else b", ") + added + b"}\n"


def write_back(corpus: Sequence[str], id_field: str | None, verdicts: Verdicts, filtered: Path | None,
               scored: Path | None, text_field: str = TEXT_FIELD) -> dict[str, int]:
    """Write the kept records' bytes to ``filtered`` and the scored records with :data:`SCORE_KEY` and
    :data:`FLAG_KEY` to ``scored``; what was not scored (past ``--max-samples``) is left out of both and said."""

    counts = {"kept": 0, "scored": 0, "unscored": 0}
    outs = [(target, target.with_name(target.name + ".tmp")) for target in (filtered, scored) if target is not None]
    handles = {target: tmp.open("wb") for target, tmp in outs}  # streamed: memory stays flat in the records
    try:
        for path in dataset_files(corpus):
            zipped = path.name.lower().endswith(".gz")
            with repeated():
                names = {line: name for name, _, line in index_records(path, id_field, zipped, text_field)}
            with (gzip.open(path, "rb") if zipped else path.open("rb")) as fh:
                for n, (raw, _) in enumerate(bounded_lines(fh, document.MAX_TEXT_BYTES), 1):  # as indexed
                    got = verdicts.get(names.get(n, ""))
                    if got is None:
                        counts["unscored"] += n in names
                        continue
                    score, flag = got
                    if not flag and filtered is not None:
                        handles[filtered].write(raw if raw.endswith(b"\n") else raw + b"\n")
                    counts["kept"] += not flag
                    counts["scored"] += 1
                    if scored is not None:
                        handles[scored].write(with_scores(raw, score, flag))
    finally:
        for handle in handles.values():
            handle.close()
    if counts["unscored"]:
        say(f"{counts['unscored']} record(s) were not scored (past --max-samples, or no window to score) and are "
            "left out of the written dataset")
    for target, tmp in outs:
        tmp.replace(target)
    return counts
