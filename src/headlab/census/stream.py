"""The scan loop: rounds of the seeded sample stream, shared among processes, checkpointed, resumable.

A round is ``world × C`` consecutive samples of the global stream (``C`` = batch size × the engine's chunk
batches); rank ``r`` scores the samples whose index ≡ r (mod world) as one chunk. After each round the ranks
exchange their samples' token scores so that every rank feeds the SDH rule the whole round in global order,
and, with ``--per-sample``, rank 0 receives every row. A round also ends at each multiple of the checkpoint
interval. On one process a round is one engine chunk, so checkpoints fall on the same chunk boundaries an
uninterrupted scan with the same interval uses, and a resumed scan adds the same numbers in the same order: its
``scan.json`` is identical. A graceful stop (Ctrl-C, SIGTERM) checkpoints the whole rounds it finished.

A checkpoint (``scan.checkpoint.npz`` + ``scan.checkpoint.json`` in the output folder, both written through a
temporary file and a rename, the JSON last, holding the npz's SHA-256) carries the merged statistics, the rule
state, the stream position, the per-sample part count and a fingerprint of every setting that changes the
numbers: a checkpoint of other settings is refused, a damaged one is reported and the scan starts over.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from headlab.census.accumulator import Census
from headlab.census.calibration import RoutePicker
from headlab.census.engine import CHUNK_BATCHES, ChunkInterrupted, score_chunk
from headlab.census.per_sample import PerSampleWriter
from headlab.census.settings import ScanSettings
from headlab.corpus import Sample
from headlab.detectors import Detector
from headlab.distributed import World
from headlab.errors import HeadlabError
from headlab.io import file_sha256, write_json_atomic
from headlab.models import LoadedModel
from headlab.notices import say

CKPT_NPZ, CKPT_JSON = "scan.checkpoint.npz", "scan.checkpoint.json"


def fingerprint(settings: dict[str, Any]) -> str:
    """SHA-256 of the settings that determine a scan's numbers (everything but budgets and progress)."""
    keep = {k: v for k, v in settings.items() if k not in ("chunk_mb", "route_reason", "checkpoint_every")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()


def align(census: Census, w: World) -> list[str]:
    """Give every rank the same detectors' statistics (a rank that has scored nothing yet has none)."""
    for shapes in w.all_gather({n: m.n.shape for n, m in census.moments.items()}):
        for name, shape in shapes.items():
            census.ensure(name, shape)
    return sorted(census.moments)


def merge_ranks(census: Census, w: World) -> None:
    """Sum every rank's additive statistics into every rank's ``census`` (the end of a sharded scan)."""
    if w.size > 1:
        arrays, put = census.sums(align(census, w))
        put(w.all_sum(arrays))


def save_checkpoint(folder: Path, census: Census, w: World, parts: int, print_: str) -> None:
    """Merge the additive statistics over ranks and write them (rank 0) with the rule and the position."""
    arrays, _ = census.sums(align(census, w))
    merged = w.all_sum(arrays)
    if not w.main:
        return
    snapshot = copy.deepcopy(census)  # the live census keeps this rank's share; the checkpoint holds the sum
    snapshot.sums(sorted(snapshot.moments))[1](merged)
    state = snapshot.state()
    tmp = folder / f".{CKPT_NPZ}.tmp.npz"
    np.savez(tmp, **state)  # type: ignore[arg-type]
    tmp.replace(folder / CKPT_NPZ)
    write_json_atomic(folder / CKPT_JSON, {"fingerprint": print_, "position": census.position, "parts": parts,
                                           "sha256": file_sha256(folder / CKPT_NPZ), "world_size": w.size})


def load_checkpoint(folder: Path, census: Census, w: World, print_: str) -> int | None:
    """Restore ``census`` from the folder's checkpoint; returns its per-sample part count, None without one."""
    meta_f, npz_f = folder / CKPT_JSON, folder / CKPT_NPZ
    if not meta_f.exists():
        return None
    try:
        meta = json.loads(meta_f.read_text())
        missing = {"fingerprint", "position", "parts", "sha256"} - set(meta if isinstance(meta, dict) else ())
        if missing:
            raise ValueError(f"{CKPT_JSON} lacks {', '.join(sorted(missing))}")
        if file_sha256(npz_f) != meta["sha256"]:
            raise ValueError("scan.checkpoint.npz does not match its digest")
        with np.load(npz_f) as z:
            state = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError) as exc:
        say(f"the checkpoint in {folder} is damaged ({exc}); the scan starts over")
        return None
    if meta["fingerprint"] != print_:
        raise HeadlabError(f"the checkpoint in {folder} belongs to a scan with other settings or other corpus files "
                           "(one was changed since); resume with the same options and files, or pass --overwrite to "
                           "start over")
    census.load(state)
    if not w.main:
        census.zeroed()  # rank 0 carries the merged sums; the others add their new shares to zero
    return int(meta["parts"])


def rounds(samples: Iterable[Sample], size: int, start: int, every: int = 0) -> Iterator[list[Sample]]:
    """The stream in rounds of ``size`` samples, from global position ``start`` (earlier ones are skipped); a
    round also ends at every multiple of ``every`` (the checkpoint interval), so a checkpoint falls where it was
    asked, in samples, and not at the end of the round that crosses it."""
    batch: list[Sample] = []
    cut = (start // every + 1) * every if every else 0
    for s in samples:
        if s.index < start:
            continue
        batch.append(s)
        if len(batch) == size or (every and s.index + 1 >= cut):
            yield batch
            batch = []
            cut = ((s.index + 1) // every + 1) * every if every else 0
    if batch:
        yield batch


def run(loaded: LoadedModel, dets: Sequence[Detector], samples: Iterable[Sample], census: Census, w: World, *,
        settings: ScanSettings, route: "str | RoutePicker", bar: Any, every: int, folder: Path | None, print_: str,
        writer: PerSampleWriter | None, rows: bool) -> KeyboardInterrupt | None:
    """Stream the samples into ``census``; returns the interrupt that stopped it early (one process), or None.
    ``rows``: per-sample rows are wanted (``writer`` is rank 0's; every rank sends its rows)."""
    batch_size = settings.batch_size
    seen: set[str] = set()  # documents reached, for the progress bar: a dataset's unit is the record
    since = " since the resume" if census.position else ""
    saved = census.position
    for batch in rounds(samples, batch_size * CHUNK_BATCHES * w.size, census.position, every):
        mine = [s for s in batch if w.mine(s.index)]
        try:
            scores = score_chunk(loaded, dets, mine, batch_size, bar, route, settings.chunk_mb) if mine else {}
        except ChunkInterrupted as stop:
            if w.size > 1:
                raise stop.cause from None  # ranks cannot agree on a partial round: the last checkpoint stands
            if every and folder is not None and census.position > saved:
                # a graceful stop keeps every whole round; the partial one goes into the interrupted result only
                save_checkpoint(folder, census, w, writer.checkpoint() if writer else 0, print_)
            done = sorted(stop.done)
            _merge(census, w, [mine[i] for i in done], {k: v[done] for k, v in stop.scores.items()}, writer, rows)
            return stop.cause
        _merge(census, w, mine, scores, writer, rows)
        census.position = batch[-1].index + 1
        if bar is not None:
            seen.update(s.doc_id for s in batch)
            bar.set_postfix_str(f"{len(seen)} documents{since}", refresh=False)
        if every and folder is not None and census.position // every > saved // every:
            saved = census.position
            save_checkpoint(folder, census, w, writer.checkpoint() if writer else 0, print_)
    return None


def _merge(census: Census, w: World, mine: list[Sample], scores: dict[str, np.ndarray],
           writer: PerSampleWriter | None, rows: bool) -> None:
    """Moments of this rank's share; the rule (and the per-sample rows) over the whole round in global order."""
    census.add_scores(mine, scores)
    token = scores.get("token")
    if w.size == 1:
        if token is not None:
            census.add_rule(token)
        if writer is not None:
            writer.add(mine, scores)
        return
    shares = w.all_gather((mine, scores) if rows else ([s.index for s in mine], {"token": token}))
    order = sorted(((idx if isinstance(idx, int) else idx.index, r, i) for r, (ids, _) in enumerate(shares)
                    for i, idx in enumerate(ids)))
    if not order:
        return
    first = shares[order[0][1]][1]
    if first.get("token") is not None:
        census.add_rule(np.stack([shares[r][1]["token"][i] for _, r, i in order]))
    if writer is not None:
        writer.add([shares[r][0][i] for _, r, i in order],
                   {k: np.stack([shares[r][1][k][i] for _, r, i in order]) for k in first})
