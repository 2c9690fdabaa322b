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

A resumed run is exact (the resume tests of test_faults.py): its later checkpoints are the uninterrupted run's.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

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
    headlab.track(run, progress=False, out=dest / "track", overwrite=True)
    measure_run(run, "carried", draws=0, seed=0).write(dest)
    for name in KEEP:
        shutil.copy2(run / name, dest / name)
    shutil.copytree(run / "tokenizer", dest / "tokenizer", dirs_exist_ok=True)
    folder = latest[0]
    shutil.rmtree(dest / "checkpoint", ignore_errors=True)
    shutil.copytree(folder, dest / "checkpoint" / folder.name)
    for name in LOGS:
        with open(run / name, "rb") as src, gzip.open(dest / f"{name}.gz", "wb") as out:
            shutil.copyfileobj(src, out)
    print(f"{run}: carried to {dest} (checkpoint {folder.name})")


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


def finish(run: Path, dest: Path) -> None:
    before = TrackResult.read(dest / "track")
    after = headlab.track(run, progress=False, overwrite=True)  # the checkpoints written since the resume
    new = [i for i, s in enumerate(after.steps) if s > before.steps[-1]]
    joined = TrackResult(str(run), before.steps + [after.steps[i] for i in new], after.n_layers, after.n_heads,
                         {m: np.concatenate([before.scores[m], after.scores[m][new]]) for m in after.scores},
                         {**before.loss, **after.loss}, after.probes)
    joined.write(run / "track")
    write_track_report(joined, run, run / "track")
    old, now = MeasureResult.read(dest / MeasureResult.KIND), measure_run(run, "resumed", draws=0, seed=0)
    keep = [i for i, s in enumerate(now.steps) if s > old.steps[-1]]
    pick = lambda xs: [xs[i] for i in keep]  # noqa: E731
    measure_record(run, run.parent.name.removeprefix("formation-sdh-"), old.steps + pick(now.steps),
                   old.mass + pick(now.mass), old.passed + pick(now.passed), old.loss + pick(now.loss)).write(run)
    print(f"{run}: {len(before.steps)} checkpoints carried, {len(new)} scored after the resume")


def main(argv: list[str]) -> int:
    verbs = {"pack": pack, "unpack": unpack, "finish": finish}
    if len(argv) != 3 or argv[0] not in verbs:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    verbs[argv[0]](Path(argv[1]), Path(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
