"""The formation studies' bookkeeping (sdh_study.sh, long_study.sh): one JSON row per sitting of a run (its
command, the step it reached, its wall time, whether it finished), or, with --thin, a run's loss log thinned to the
first 100 steps and every 100th after (every step is about 10 MB a run).

    python bench/studies/sdh_row.py RUN CONFIG SEED RESUME WALL_S
    python bench/studies/sdh_row.py --thin RUN/metrics.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from headlab.io import read_jsonl


def row(run: Path, config: str, seed: str, resume: str, wall: str) -> dict[str, object]:
    log = run / "metrics.jsonl"
    reached = read_jsonl(log)[-1]["step"] if log.exists() and log.stat().st_size else 0
    return {"seed": int(seed), "command": f"headlab train {config} --seed {seed} --out {run} {resume}".strip(),
            "reached_step": reached, "wall_s": int(wall), "finished": (run / "final.safetensors").exists()}


def main(argv: list[str]) -> int:
    if argv[0] == "--thin":
        for r in read_jsonl(Path(argv[1])):
            if r["step"] <= 100 or r["step"] % 100 == 0:
                print(json.dumps(r))
        return 0
    print(json.dumps(row(Path(argv[0]), *argv[1:5])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
