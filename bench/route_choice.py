"""Benchmark: does ``auto`` take the faster exact route for each shape, and what does it cost against SDPA?

For each (batch, length): consecutive windows of one real document (Python's library/stdtypes docs, as
bench/long_context.py), the six default detectors, and in interleaved rounds (median shown):
  (a) a bare SDPA forward of the batch (the floor);
  (d) the eager route, (e) the fused route, through the census engine (score_chunk, as a scan runs);
  (x) auto: the engine with a RoutePicker on an empty cost cache (its first call times the candidates,
      reported as the one-off calibration; the rounds then read the cached choice).
Prints each route's ratio to (a), the route auto picked, and whether it is the faster of (d) and (e) in this run.

    .venv/bin/python bench/route_choice.py [--model minilm-l6] [--shapes 1x128,8x128,1x512] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from long_context import document  # noqa: E402

from headlab import load  # noqa: E402
from headlab.census.calibration import RoutePicker  # noqa: E402
from headlab.census.engine import collate, forward, plan_route, score_chunk  # noqa: E402
from headlab.corpus import Sample  # noqa: E402
from headlab.detectors import DEFAULT_DETECTORS, bind_to, make  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="minilm-l6")
    ap.add_argument("--shapes", default="1x128,8x128,1x512", help="comma-separated BxT")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    lm = load(args.model, dtype=args.dtype)
    ids = lm.tokenizer(document(), add_special_tokens=False)["input_ids"]
    print(f"model {args.model}, dtype {args.dtype}, torch threads {torch.get_num_threads()}, "
          f"{args.repeats} interleaved rounds (median)")
    for shape in args.shapes.split(","):
        B, T = (int(x) for x in shape.split("x"))
        print(_one(lm, [Sample(b, "doc", b, tuple(ids[b * T:(b + 1) * T])) for b in range(B)], args.repeats))


def _one(lm, windows: list, repeats: int) -> str:
    """One shape's line: each route's median ratio to SDPA, and auto's pick against the faster of the two."""
    B, T = len(windows), len(windows[0].input_ids)
    dets = [make(n) for n in DEFAULT_DETECTORS]
    bind_to(lm, dets)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["HEADLAB_CACHE"] = cache
        picker = plan_route(lm, dets)[1]
        assert isinstance(picker, RoutePicker), picker
        t0 = time.perf_counter()
        score_chunk(lm, dets, windows, B, route=picker)
        calibration = time.perf_counter() - t0
        runs = {
            "a": lambda: _sdpa(lm, windows),
            "d": lambda: score_chunk(lm, dets, windows, B, route="eager"),
            "e": lambda: score_chunk(lm, dets, windows, B, route="fused"),
            "x": lambda: score_chunk(lm, dets, windows, B, route=picker),
        }
        for run in runs.values():
            run()  # warm-up
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(repeats):
            for k, run in runs.items():
                t = time.perf_counter()
                run()
                times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    chose = next(iter(picker.report().values()))
    faster = "eager" if med["d"] < med["e"] else "fused"
    return (f"  {B}x{T}: (a) SDPA {med['a']:.4f} s | (d) eager {med['d'] / med['a']:.2f}x | (e) fused "
            f"{med['e'] / med['a']:.2f}x | (x) auto {med['x'] / med['a']:.2f}x -> {chose['route']} "
            f"({'the faster here' if chose['route'] == faster else 'NOT the faster here: ' + faster}; "
            f"timed {chose.get('seconds')}; calibration once {calibration:.2f} s)")


def _sdpa(lm, windows) -> None:
    lm.model.set_attn_implementation("sdpa")
    try:
        with torch.inference_mode():
            forward(lm, collate(windows, lm.pad_id, lm.facts.causal, torch.device("cpu")))
    finally:
        lm.model.set_attn_implementation("eager")


if __name__ == "__main__":
    main()
