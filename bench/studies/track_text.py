"""Give tracked runs their phases and report again, from what is committed beside them (``track/track.json``,
``config.toml``, ``signals.jsonl``): no checkpoint is read and no figure is redrawn. For runs tracked by an older
headlab whose report text has since changed (the long study's first seeds compared the document's stages by
scaling them to an assumed run length).

    python bench/studies/track_text.py results/formation/long/s0 results/formation/long/s1

A run's phases must come out as they were: the scores and the slash-gradient phases are compared with the
committed ``phases.json`` before anything is written, and a run whose phases would change is refused.
"""

from __future__ import annotations

import sys
from pathlib import Path

from headlab.formation.track_report import PhasesResult, phases_record, write_track_text
from headlab.formation.tracking import TrackResult


def _phases(record: PhasesResult) -> dict:
    """What must come out as it was: the phases of the scores and of the slash-gradient share."""
    d = record.to_json()
    return {k: d[k] for k in ("scores", "slash_gradient_share")}


def main(argv: list[str]) -> int:
    runs = [Path(a) for a in argv]
    missing = [r for r in runs if not (r / "track" / "track.json").is_file()]
    if not runs or missing:
        print(f"{missing[0] if missing else '(no run)'}: give tracked run folders (holding track/track.json)",
              file=sys.stderr)
        return 2
    for run in runs:
        t = TrackResult.read(run / "track")
        record = phases_record(t, run)
        if _phases(record) != _phases(PhasesResult.read(run / "track")):
            print(f"{run}: its phases would change; track it again with headlab track", file=sys.stderr)
            return 1
        write_track_text(t, run, run / "track", record)
        print(f"{run}: phases.json and track.md written again")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
