"""Document fingerprints: per-sample head scores from a scan (``--per-sample``), averaged over each document's
windows, for a chosen set of ``DETECTOR/L.H`` features.

A score that is undefined in a window (the token detector's mass on a target the window lacks) counts as 0: the
window gives that target no attention. A document is one row; its windows are all the scan drew from it.

The per-sample table is read back in row batches of the feature columns only (never the token ids), so what is
held in memory is one running sum per document and feature, whatever the number of windows; a check's
:func:`ordered_fingerprints` holds one bucket of documents' sums, whatever the number of documents.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from headlab.census.scanner import scan
from headlab.corpus import documents
from headlab.corpus.records import ID_FIELD, TEXT_FIELD
from headlab.errors import HeadlabError
from headlab.monitor.settings import MONITOR_DETECTORS
from headlab.notices import recorded, repeated

#: detectors whose every head is a feature (the others contribute their top heads)
ALL_HEADS = ("entropy",)
BATCH_ROWS = 4096
#: documents per bucket of :func:`ordered_fingerprints` (120 features: 8 MB), and the most bucket files open at once
BUCKET_DOCS, MAX_BUCKETS = 8192, 256


@contextmanager
def scanned(model: Any, corpus: Sequence[str], max_samples: int, seed: int, batch_size: int, max_length: int,
            progress: bool, device: str, detectors: Sequence[str] = MONITOR_DETECTORS,
            id_field: str | None = ID_FIELD, *, work: Path | None = None, resume: bool = False,
            checkpoint_every: int | None, dtype: str,
            text_field: str = TEXT_FIELD) -> Iterator[tuple[Path, Any]]:
    """A per-sample scan of ``corpus``: the Parquet path and the scan result. Without ``work`` it lives in a
    temporary folder removed on exit; with ``work`` the scan checkpoints there every ``checkpoint_every``
    samples and ``resume`` continues it (the caller removes ``work`` once its result is written)."""

    with ExitStack() as stack:
        folder = work if work is not None else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="headlab-monitor-")))
        kept: dict[str, Any] = {} if work is None else {"checkpoint_dir": folder, "resume": resume,
                                                        "checkpoint_every": checkpoint_every}
        folder.mkdir(parents=True, exist_ok=True)
        rows = folder / "rows.parquet"
        r = scan(model, corpus=list(corpus), detectors=list(detectors), max_samples=max_samples, seed=seed,
                 batch_size=batch_size, max_length=max_length, progress=progress, device=device, per_sample=rows,
                 id_field=id_field, text_field=text_field, dtype=dtype, rule_notes=False, **kept)
        # exits as the interrupt did: 130 for Ctrl-C, 143 for SIGTERM
        r.stop_if_interrupted("the monitor" if work is None else f"the monitor (finish it with --resume; {work} "
                              "holds its checkpoint)")
        yield rows, r


def _batches(path: Path, columns: Sequence[str]) -> Iterator[Any]:
    # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path, pre_buffer=False)  # pre-buffering holds every row group read so far: memory grows
    missing = [c for c in columns if c not in pf.schema_arrow.names]
    if missing:
        raise HeadlabError(f"the scan has no column {missing[0]!r}: fit and check with the same detectors")
    yield from pf.iter_batches(batch_size=BATCH_ROWS, columns=list(columns))


def doc_sums(batch: Any, features: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row batch's documents (``doc`` first, then ``features``): their ids, their windows' summed scores
    ``(docs, features)`` (undefined = 0) and their numbers of windows."""
    X = np.nan_to_num(np.column_stack([batch.column(i + 1).to_numpy(zero_copy_only=False)
                                       for i in range(len(features))]).astype(np.float64), nan=0.0)
    uniq, inv = np.unique(np.asarray(batch.column(0).to_pylist(), dtype=str), return_inverse=True)
    part = np.zeros((len(uniq), len(features)))
    np.add.at(part, inv, X)
    return uniq, part, np.bincount(inv, minlength=len(uniq))


def fingerprints(path: Path, features: Sequence[str]) -> tuple[np.ndarray, list[str], np.ndarray]:
    """``(documents, features)`` means over each document's windows, the document ids (sorted), windows each."""
    index: dict[str, int] = {}
    sums: list[np.ndarray] = []
    counts: list[int] = []
    for b in _batches(path, ["doc", *features]):
        for d, row, c in zip(*doc_sums(b, features)):
            i = index.setdefault(str(d), len(sums))
            if i == len(sums):
                sums.append(np.zeros(len(features)))
                counts.append(0)
            sums[i] += row
            counts[i] += int(c)
    order = sorted(index)
    n = np.array([counts[index[d]] for d in order])
    X = np.array([sums[index[d]] for d in order]).reshape(len(order), len(features)) / np.maximum(n, 1)[:, None]
    return X, order, n


def ordered_fingerprints(path: Path, features: Sequence[str], rank: dict[str, int], folder: Path
                         ) -> Iterator[tuple[np.ndarray, list[str], np.ndarray, np.ndarray]]:
    """The fingerprints of :func:`fingerprints` in the corpus's own order (``rank``, from :func:`check_corpus`),
    a bucket of documents at a time: ``(X, docs, windows, positions)``. The scan's rows come in a seeded order,
    so each row batch's sums go to the bucket file (under ``folder``) of their documents' positions first;
    memory holds one bucket, whatever the number of documents."""
    names = [""] * (max(rank.values(), default=-1) + 1)  # position -> id: buckets are cut by position
    for doc, i in rank.items():
        names[i] = doc
    size = max(BUCKET_DOCS, -(-len(names) // MAX_BUCKETS))
    kind = np.dtype([("at", np.int64), ("n", np.int64), ("sums", np.float64, (len(features),))])
    files = [folder / f"bucket-{b:05d}.bin" for b in range(-(-len(names) // size))]
    handles = [f.open("wb") for f in files]
    try:
        for b in _batches(path, ["doc", *features]):
            docs, sums, counts = doc_sums(b, features)
            at = np.array([rank.get(str(d), -1) for d in docs], dtype=np.int64)
            if (at < 0).any():
                raise HeadlabError(f"the scan has document {docs[at < 0][0]!r}, which the corpus does not: "
                                   "the corpus changed while it was checked; check it again")
            rec = np.empty(len(docs), kind)
            rec["at"], rec["n"], rec["sums"] = at, counts, sums
            for k in np.unique(at // size):
                rec[at // size == k].tofile(handles[k])
    finally:
        for h in handles:
            h.close()
    for k, f in enumerate(files):
        rec = np.fromfile(f, kind)
        f.unlink()
        local = rec["at"] - k * size
        sums, n = np.zeros((size, len(features))), np.zeros(size, dtype=np.int64)
        np.add.at(sums, local, rec["sums"])
        np.add.at(n, local, rec["n"])
        seen = np.flatnonzero(n)
        if len(seen):
            yield sums[seen] / n[seen, None], [names[k * size + i] for i in seen], n[seen], k * size + seen


def column_means(path: Path) -> dict[str, float]:
    """Mean of every ``DETECTOR/L.H`` score column over all windows (undefined = 0)."""
    # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
    import pyarrow.parquet as pq

    cols = [c for c in pq.ParquetFile(path).schema_arrow.names if "/" in c and not c.startswith("offset_delta/")]
    total, n = np.zeros(len(cols)), 0
    for b in _batches(path, cols):
        total += np.nansum(np.column_stack([c.to_numpy(zero_copy_only=False) for c in b.columns]), 0)
        n += b.num_rows
    return dict(zip(cols, (total / max(n, 1)).tolist()))


def choose_features(means: dict[str, float], per_detector: int) -> list[str]:
    """The ``per_detector`` heads with the highest mean score of every detector (every head of
    :data:`ALL_HEADS` detectors), in detector order."""
    by_det: dict[str, list[str]] = {}
    for c in means:
        by_det.setdefault(c.split("/")[0], []).append(c)
    out = []
    for det, group in sorted(by_det.items()):
        ranked = sorted(group, key=lambda c: -means[c])
        out += group if det in ALL_HEADS else ranked[:per_detector]
    return out


def read_columns(path: Path, columns: Sequence[str]) -> Any:
    """Chosen columns of the per-sample table as a pandas DataFrame (the evaluation's window texts)."""
    # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=list(columns)).to_pandas()


def check_corpus(corpus: Sequence[str], id_field: str | None, text_field: str = TEXT_FIELD) -> dict[str, int]:
    """Refuse an empty corpus or one whose records share an id before a model is loaded (its notices are said
    by the scan that reads it); the position of every document in the corpus's order."""

    try:
        with repeated():
            return {d.doc_id: i for i, d in enumerate(documents(list(corpus), id_field, text_field))}
    except HeadlabError:
        pass
    with recorded() as said:  # refused: read once more with its notices, for the refusal to say why
        try:
            documents(list(corpus), id_field, text_field)
        except HeadlabError as exc:
            why = next((s for s in said if "--text-field" in s), None)  # records whose text is in another field
            raise HeadlabError(f"{exc}: {why}" if why else str(exc)) from None
    raise HeadlabError(f"corpus {', '.join(corpus)} could not be read twice alike")
