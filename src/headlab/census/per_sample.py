"""Per-sample scan results as Parquet (``headlab scan --per-sample FILE.parquet``), and reading them back.

One row per sample, in the seeded global order. Columns:

* ``sample`` (int64): index in the seeded sample stream; ``doc`` (string): document id; ``window`` (int32): the
  window's number within its document; ``n_tokens`` (int32); ``has_target`` (bool): the window holds the token
  detector's target (null without that detector); ``ids`` (list<int32>): the window's token ids;
* per detector and head, ``DETECTOR/L.H`` (float32; NaN where the score is undefined, e.g. no target); for
  ``offset`` the best diagonal's SlashScore ``offset/L.H`` and that diagonal ``offset_delta/L.H`` (int16).

Rows are written in row groups of about 8 MB as chunks finish (memory stays flat in corpus size), into numbered
part files next to the target; a checkpoint closes the current part, a resumed scan drops parts written after its
checkpoint, and the finished scan joins the parts into ``FILE.parquet``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headlab.corpus import Sample
from headlab.errors import HeadlabError, naming
from headlab.head import name as head_name

#: rows are buffered into row groups of about this many bytes. A Parquet writer holds every row group's column
#: metadata until it closes: one row group per scanned chunk (128 samples at the defaults), 20,000 rows of 582
#: columns held 150 MB of it (bench/monitor_check_memory.py's growth); an 8 MB group costs its buffer instead
GROUP_BYTES = 8 << 20


def columns_of(name: str, block: np.ndarray) -> dict[str, np.ndarray]:
    """``DETECTOR/L.H`` columns of one detector's ``(N, L, H[, K])`` block (contiguous, no copy per column)."""
    if block.ndim == 4:  # offset: SlashScore per diagonal -> the best diagonal and its score
        delta = np.where(np.isnan(block), -np.inf, block).argmax(-1)
        best = np.take_along_axis(block, delta[..., None], -1)[..., 0]
        return {**columns_of(name, best), **columns_of(f"{name}_delta", delta.astype(np.int16))}
    _, L, H = block.shape
    by_head = np.ascontiguousarray(block.reshape(len(block), L * H).T)  # (L*H, N): each row one column
    if by_head.dtype != np.int16:
        by_head = by_head.astype(np.float32, copy=False)
    return {f"{name}/{head_name(l, h)}": by_head[l * H + h] for l in range(L) for h in range(H)}


#: the schema metadata key of the scanned model's name
MODEL_KEY = b"headlab.model"


def recorded_model(path: str | Path) -> str | None:
    """The model a per-sample file was scanned with (None for a file written before it was recorded)."""
    # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
    import pyarrow.parquet as pq

    found = (pq.read_schema(path).metadata or {}).get(MODEL_KEY)
    return None if found is None else found.decode()


class PerSampleWriter:
    """Streams rows into ``FILE.parquet.parts/part-NNNNN.parquet``; :meth:`finish` joins them into ``FILE``."""

    def __init__(self, path: str | Path, parts_kept: int = 0, model: str | None = None):
        self.path = Path(path)
        self.model = model  # recorded in the file: top decodes its windows with this model's tokenizer
        self.parts = self.path.with_name(self.path.name + ".parts")
        self.parts.mkdir(parents=True, exist_ok=True)
        for stale in sorted(self.parts.glob("part-*.parquet"))[parts_kept:]:  # written after the checkpoint
            stale.unlink()
        self.n_parts = parts_kept
        self._writer: Any = None
        self._buffered: list[Any] = []
        self._size = 0

    def add(self, samples: Sequence[Sample], scores: dict[str, np.ndarray]) -> None:
        # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
        import pyarrow as pa

        if not samples:
            return
        token = scores.get("token")
        cols: dict[str, Any] = {
            "sample": pa.array([s.index for s in samples], pa.int64()),
            "doc": pa.array([s.doc_id for s in samples], pa.string()),
            "window": pa.array([s.window for s in samples], pa.int32()),
            "n_tokens": pa.array([len(s.input_ids) for s in samples], pa.int32()),
            "has_target": pa.array(~np.isnan(token[:, 0, 0]), pa.bool_()) if token is not None
            else pa.nulls(len(samples), pa.bool_()),
            "ids": pa.ListArray.from_arrays(
                np.cumsum([0] + [len(s.input_ids) for s in samples], dtype=np.int32),
                np.fromiter((t for s in samples for t in s.input_ids), dtype=np.int32)),
        }
        for name, block in scores.items():
            cols.update(columns_of(name, block))  # NaN stays NaN: an undefined score
        self._buffered.append(pa.table(cols))
        self._size += self._buffered[-1].nbytes
        if self._size >= GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._buffered:
            return
        table = pa.concat_tables(self._buffered)
        self._buffered, self._size = [], 0
        part = self.parts / f"part-{self.n_parts:05d}.parquet"
        with naming(part):
            if self._writer is None:
                self._writer = pq.ParquetWriter(part, table.schema)
            self._writer.write_table(table)

    def checkpoint(self) -> int:
        """Write what is buffered and close the current part; returns the number of complete parts (what a
        checkpoint records)."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self.n_parts += 1
        return self.n_parts

    def finish(self, keep_parts: bool = False) -> Path:
        """Join the parts into ``FILE.parquet`` (row group by row group) and remove them (``keep_parts``: keep
        them for a resume: an interrupted scan's rows continue from its checkpoint's parts)."""
        # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
        import pyarrow.parquet as pq

        self.checkpoint()
        files = sorted(self.parts.glob("part-*.parquet"))
        if not files:
            raise HeadlabError(f"no per-sample rows were written to {self.path}")
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        schema = pq.read_schema(files[0])
        if self.model is not None:
            schema = schema.with_metadata({**(schema.metadata or {}), MODEL_KEY: self.model.encode()})
        with naming(self.path), pq.ParquetWriter(tmp, schema) as out:
            for f in files:
                pf = pq.ParquetFile(f)
                for g in range(pf.num_row_groups):
                    out.write_table(pf.read_row_group(g))
        tmp.replace(self.path)
        if not keep_parts:
            shutil.rmtree(self.parts)
        return self.path


def top(path: str | Path, head: str, detector: str, k: int) -> list[dict[str, Any]]:
    """The ``k`` samples where ``head`` scores highest under ``detector`` (undefined scores never rank)."""
    # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
    import pyarrow as pa
    import pyarrow.parquet as pq

    col = f"{detector}/{head}"
    try:
        names = pq.read_schema(path).names
    except (pa.ArrowInvalid, OSError) as exc:  # a truncated or fake file
        raise HeadlabError(f"{path} is not a readable Parquet file ({str(exc).splitlines()[0]}); give the file "
                           "scan --per-sample wrote") from None
    if col not in names:
        have = sorted({c.split("/")[0] for c in names if "/" in c})
        raise HeadlabError(f"{path} has no column {col!r}; detectors in it: {', '.join(have)}; heads are L.H")
    t = pq.read_table(path, columns=["sample", "doc", "window", "ids", col])
    scores = t.column(col).to_numpy(zero_copy_only=False).astype(float)
    order = [i for i in np.argsort(-np.nan_to_num(scores, nan=-np.inf), kind="stable") if not np.isnan(scores[i])]
    rows = []
    for i in order[:k]:
        rows.append({"score": float(scores[i]), "sample": t.column("sample")[int(i)].as_py(),
                     "doc": t.column("doc")[int(i)].as_py(), "window": t.column("window")[int(i)].as_py(),
                     "ids": t.column("ids")[int(i)].as_py()})
    return rows
