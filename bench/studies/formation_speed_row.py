"""One row of results/formation/long/speed.jsonl (speed.sh): a timed training run's steps per second.

    python bench/studies/formation_speed_row.py RUN L H D T B T0 T1 >> speed.jsonl

T0 and T1 are the wall-clock seconds around the whole ``headlab train`` command (data pool, tokenizer, signals
and checkpoints included).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    run, L, H, D, T, B, t0, t1 = argv
    rows = [json.loads(x) for x in (Path(run) / "metrics.jsonl").read_text().splitlines()]
    steps = rows[-1]["step"]
    wall = float(t1) - float(t0)
    print(json.dumps({"n_layers": int(L), "n_heads": int(H), "d_model": int(D), "window": int(T),
                      "batch_size": int(B), "steps": steps, "wall_s": round(wall, 1),
                      "steps_per_s": round(steps / wall, 2), "hours_for_100k": round(100000 / (steps / wall) / 3600, 2),
                      "loss_at_end": rows[-1]["loss"]}))


if __name__ == "__main__":
    main(sys.argv[1:])
