"""Carry an unfinished run of the slash-dense study across sittings, when the next sitting may begin in a new
checkout without runs/ (sdh_study.sh calls it).

A run's 48 checkpoints are about 180 MB, too much to commit each time a sitting ends. What the next sitting needs
is smaller: the scores of the checkpoints already written (every head at every checkpoint, `headlab track`'s and
the strict rule's, both deterministic functions of the weights) and the latest checkpoint to resume from. So:

    pack RUN DEST     score RUN's checkpoints (track/ and measure.json into DEST/), and copy into DEST what a
                      resume needs: the latest sound checkpoint, the config, the tokenizer, the data pool (with its
                      digest) and the logs (gzipped)
    unpack DEST RUN   make RUN again from DEST (refused when RUN already holds checkpoints)
    finish RUN DEST   after the resumed run has finished: score its own checkpoints, join them after the carried
                      ones (track.json, its report and figures, and measure.json), and say how many came from each
    rejoin OLD RESULT RUN
                      put an older carry's scores before a finished run's committed ones (RESULT: ARM/sSEED)

A resumed run is exact (the resume tests of test_faults.py): its later checkpoints are the uninterrupted run's.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path
from typing import Callable

import numpy as np

import headlab
from headlab.formation.induce.measure import MeasureResult, measure_record, measure_run
from headlab.formation.track_report import write_track_report
from headlab.formation.tracking import TrackResult
from headlab.training import checkpoint as ckpt

KEEP = ("config.toml", "data.json", "data.safetensors")
LOGS = ("metrics.jsonl", "signals.jsonl")


def pack(run: Path, dest: Path) -> None:
    latest = ckpt.latest_good(run)
    if latest is None:
        raise SystemExit(f"{run} has no sound checkpoint to carry")
    dest.mkdir(parents=True, exist_ok=True)
    # a run made again from an earlier carry holds only the checkpoints since then: keep the carried scores before
    # them (a second pack once overwrote them, and lost a run's first 30 checkpoints)
    track, measure = scored(run, dest if (dest / "track").exists() else None, "carried")
    track.write(dest / "track")
    write_track_report(track, run, dest / "track")
    measure.write(dest)
    for name in KEEP:
        shutil.copy2(run / name, dest / name)
    shutil.copytree(run / "tokenizer", dest / "tokenizer", dirs_exist_ok=True)
    folder = latest[0]
    shutil.rmtree(dest / "checkpoint", ignore_errors=True)
    shutil.copytree(folder, dest / "checkpoint" / folder.name)
    for name in LOGS:
        with open(run / name, "rb") as src, gzip.open(dest / f"{name}.gz", "wb") as out:
            shutil.copyfileobj(src, out)
    print(f"{run}: carried to {dest} (checkpoint {folder.name}, {len(track.steps)} checkpoints scored)")


def unpack(dest: Path, run: Path) -> None:
    if ckpt.checkpoints(run):
        raise SystemExit(f"{run} already holds checkpoints; nothing unpacked")
    run.mkdir(parents=True, exist_ok=True)
    for name in KEEP:
        shutil.copy2(dest / name, run / name)
    shutil.copytree(dest / "tokenizer", run / "tokenizer", dirs_exist_ok=True)
    for folder in (dest / "checkpoint").iterdir():
        shutil.copytree(folder, run / "checkpoints" / folder.name)
    for name in LOGS:
        with gzip.open(dest / f"{name}.gz", "rb") as src, open(run / name, "wb") as out:
            shutil.copyfileobj(src, out)
    print(f"{run}: made again from {dest}")


def scored(run: Path, carried: Path | None, arm: str) -> tuple[TrackResult, MeasureResult]:
    """The scores of ``run``'s checkpoints on disk (``headlab track``'s and the strict rule's), after those held in
    ``carried`` (a carry's track/ and measure.json) for the checkpoints before them."""
    after = headlab.track(run, progress=False, overwrite=True)
    now = measure_run(run, arm, draws=0, seed=0)
    return (after, now) if carried is None else join(carried, after, now, run, arm)


def join(carried: Path, after: TrackResult, now: MeasureResult, run: Path, arm: str
         ) -> tuple[TrackResult, MeasureResult]:
    """``carried``'s scores, then those of ``after`` and ``now`` at later steps."""
    before = TrackResult.read(carried / "track")
    new = [i for i, s in enumerate(after.steps) if s > before.steps[-1]]
    track = TrackResult(str(run), before.steps + [after.steps[i] for i in new], after.n_layers, after.n_heads,
                        {m: np.concatenate([before.scores[m], after.scores[m][new]]) for m in after.scores},
                        {**before.loss, **after.loss}, after.probes)
    old = MeasureResult.read(carried / MeasureResult.KIND)
    keep = [i for i, s in enumerate(now.steps) if s > old.steps[-1]]
    pick = lambda xs: [xs[i] for i in keep]  # noqa: E731
    measure = measure_record(run, arm, old.steps + pick(now.steps), old.mass + pick(now.mass),
                             old.passed + pick(now.passed), old.loss + pick(now.loss))
    return track, measure


def finish(run: Path, dest: Path) -> None:
    n_carried = len(TrackResult.read(dest / "track").steps)
    track, measure = scored(run, dest, run.parent.name.removeprefix("formation-sdh-"))
    track.write(run / "track")
    write_track_report(track, run, run / "track")
    measure.write(run)
    print(f"{run}: {n_carried} checkpoints carried, {len(track.steps) - n_carried} scored after the resume")


def rejoin(carried: Path, result: Path, run: Path) -> None:
    """Put the scores of an older carry (``carried``: its track/ and measure.json) before a finished run's committed
    ones (``result``: ARM/sSEED), when a later pack dropped them; ``run`` is the run's folder (its logs)."""
    arm = result.parent.name
    track, measure = join(carried, TrackResult.read(result / "track"), MeasureResult.read(result / MeasureResult.KIND),
                          run, arm)
    track.write(result / "track")
    write_track_report(track, run, result / "track")
    measure.write(result)
    print(f"{result}: {len(track.steps)} checkpoints scored")


def main(argv: list[str]) -> int:
    verbs: dict[str, Callable[..., None]] = {"pack": pack, "unpack": unpack, "finish": finish, "rejoin": rejoin}
    arity = {"rejoin": 3}
    if not argv or argv[0] not in verbs or len(argv) != 1 + arity.get(argv[0], 2):
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    verbs[argv[0]](*(Path(a) for a in argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
