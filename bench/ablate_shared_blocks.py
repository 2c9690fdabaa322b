"""``headlab ablate`` with the blocks below the ablated heads computed once per batch, against recomputing them in
every condition (the baseline, measured in the same process), on a newcomer's case: one head of a late layer of
smollm2-135m on prose, every token scored.

    .venv/bin/python bench/ablate_shared_blocks.py [--model smollm2-135m] [--heads 18.6] [--draws 20]
        [--samples 48] [--window 64] [--positions all] [--stop-after H] [--dtype float32] [--threads 2]
        [--no-baseline] [--out FILE.json]

Both runs must give the same record (every delta and the p-value); the ratio is baseline / shared wall time.
--no-baseline times the shared route alone (a 100-draw run), --stop-after the sequential p-value's early stop.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import torch

import headlab.ablation.experiment as experiment
from headlab import load

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@contextlib.contextmanager
def every_block(*_a: Any, **_k: Any) -> Iterator[None]:
    yield


def timed(lm: Any, a: argparse.Namespace) -> tuple[float, dict[str, Any]]:
    st = experiment.AblateSettings(draws=a.draws, samples=a.samples, window=a.window, positions=a.positions,
                                   stop_after=a.stop_after, seed=0)
    t = time.perf_counter()
    r = experiment.ablate_experiment(lm, a.heads, st, progress=False, dtype=a.dtype)
    return time.perf_counter() - t, r.to_json()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--heads", nargs="+", default=["18.6"])
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--samples", type=int, default=48)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--positions", default="all")
    ap.add_argument("--stop-after", type=int, default=None)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    lm = load(a.model, lm_head=True, dtype=a.dtype)
    shared_s, shared = timed(lm, a)
    row: dict[str, Any] = {}
    if not a.no_baseline:
        real = experiment.shared_blocks
        experiment.shared_blocks = every_block  # type: ignore[assignment]
        try:
            base_s, base = timed(lm, a)
        finally:
            experiment.shared_blocks = real  # type: ignore[assignment]
        row = {"every_block_s": round(base_s, 1), "ratio": round(base_s / shared_s, 2), "same_record": base == shared}
    same = row.get("same_record", True)
    c = shared["control"]
    row = {"model": a.model, "heads": a.heads, "draws": a.draws, "drawn": c["draws"], "samples": a.samples,
           "tokens": shared["n_tokens"], "positions": a.positions, "stop_after": a.stop_after, "dtype": a.dtype,
           "threads": a.threads, "n_layers": lm.facts.n_layers, "shared_s": round(shared_s, 1), **row,
           "p_value": c["p_value"], "p_two_sided": c["p_two_sided"],
           "command": " ".join(["bench/ablate_shared_blocks.py", *sys.argv[1:]])}
    print(json.dumps(row))
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(row, indent=2) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
