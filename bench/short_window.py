"""The census of short windows against a bare SDPA forward of the same batches: the ratio the short-window floor
is judged by, for each model, dtype and batch size, measured in one process (interleaved rounds, median).

    .venv/bin/python bench/short_window.py [--models minilm-l6 smollm2-135m] [--batches 1 8 16]
        [--dtypes float32 bfloat16] [--length 128] [--rounds 5] [--threads 1] [--out FILE.json]

"headlab" is what a scan runs per chunk: :func:`headlab.census.engine.score_samples` with the default detectors
and route (``auto``), over four batches of windows of Python's stdtypes documentation, so the route is the one an
untimed shape takes. "bare" is the model's own SDPA forward of the same four collated batches, nothing captured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from long_context import document

from headlab import load
from headlab.census.engine import collate, forward, plan_route, score_samples
from headlab.corpus import Sample
from headlab.detectors import DEFAULT_DETECTORS, make

os.environ.setdefault("HF_HUB_OFFLINE", "1")
N_BATCHES = 4


def cell(model: str, dtype: str, B: int, T: int, rounds: int) -> dict[str, object]:
    lm = load(model, dtype=dtype)
    ids = lm.tokenizer(document(), add_special_tokens=False)["input_ids"]
    samples = [Sample(i, "doc", i, tuple(ids[i * T:(i + 1) * T])) for i in range(B * N_BATCHES)]
    batches = [collate(samples[a:a + B], lm.pad_id, lm.facts.causal, torch.device("cpu"))
               for a in range(0, len(samples), B)]
    dets = [make(n) for n in DEFAULT_DETECTORS]

    def bare() -> None:
        lm.model.set_attn_implementation("sdpa")
        try:
            with torch.inference_mode():
                for b in batches:
                    forward(lm, b)
        finally:
            lm.model.set_attn_implementation("eager")

    def headlab() -> None:
        list(score_samples(lm, dets, samples, batch_size=B))

    bare(), headlab()
    times: dict[str, list[float]] = {"bare": [], "headlab": []}
    for _ in range(rounds):
        for name, fn in (("bare", bare), ("headlab", headlab)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    _, picker = plan_route(lm, dets)  # the route the scan took: an untimed shape, so nothing is run here
    route = picker if isinstance(picker, str) else picker.pick(B, T, lambda: batches[0], lambda r, b: None,
                                                                N_BATCHES)
    return {"model": model, "dtype": dtype, "batch": B, "T": T, "bare_s": med["bare"], "headlab_s": med["headlab"],
            "ratio": med["headlab"] / med["bare"], "route": route, "rounds": rounds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["minilm-l6", "smollm2-135m"])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 8, 16])
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    rows = []
    print(f"| model | dtype | batch | bare SDPA, s | headlab, s | ratio | route |  ({a.threads} thread(s), "
          f"{N_BATCHES} batches of {a.length} tokens, median of {a.rounds})")
    print("|---|---|---|---|---|---|---|")
    for model in a.models:
        for dtype in a.dtypes:
            for B in a.batches:
                r = cell(model, dtype, B, a.length, a.rounds)
                rows.append(r)
                print(f"| {model} | {dtype} | {B} | {r['bare_s']:.3f} | {r['headlab_s']:.3f} | {r['ratio']:.3f} | "
                      f"{r['route']} |", flush=True)
    if a.out:
        a.out.write_text(json.dumps({"command": " ".join(sys.argv), "threads": a.threads, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
