"""Where a census forward of short windows spends what a bare forward does not: torch's profiler over ten
forwards of each, the per-operator self time of the fused route minus the bare SDPA forward's, and the wall
times of both in the same process (interleaved rounds, median).

    .venv/bin/python bench/short_window_profile.py [--model smollm2-135m] [--shape 1x128] [--threads 1] [--route fused]

The bare eager forward (the model's own eager attention, nothing captured) is timed beside them: it is the floor of
every peer that reads attention probabilities (``output_attentions``, nnsight).

The windows and detectors are bench/long_context.py's (Python's stdtypes documentation, the default detectors).
The operator table counts only time inside torch operators; the wall-time gap beyond it is the Python of the
per-layer evaluation (hooks, views, detectors), which the profiler does not attribute to an operator.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from long_context import document
from torch.profiler import ProfilerActivity, profile

from headlab import load
from headlab.census.engine import collate, forward, score_batches
from headlab.corpus import Sample
from headlab.detectors import DEFAULT_DETECTORS, make

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--shape", default="1x128", help="BxT: B windows of T tokens")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--route", default="fused", choices=("fused", "eager"),
                    help="the census route to profile (eager: the one short batches of 2+ windows take)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    B, T = map(int, a.shape.split("x"))
    lm = load(a.model)
    ids = lm.tokenizer(document(), add_special_tokens=False)["input_ids"]
    windows = [tuple(ids[b * T:(b + 1) * T]) for b in range(B)]
    dets = [make(n) for n in DEFAULT_DETECTORS]
    for d in dets:
        d.bind(lm)

    def batch():  # type: ignore[no-untyped-def]
        return collate([Sample(b, "doc", b, w) for b, w in enumerate(windows)], lm.pad_id, lm.facts.causal,
                       torch.device("cpu"))

    def bare() -> None:
        lm.model.set_attn_implementation("sdpa")
        forward(lm, batch())
        lm.model.set_attn_implementation("eager")

    def eager() -> None:
        # the floor of every peer that reads probabilities: the model's own eager attention, nothing captured
        forward(lm, batch())

    def fused() -> None:
        list(score_batches(lm, dets, [batch()], a.route, 64.0))

    with torch.inference_mode():
        bare(), eager(), fused()
        times: dict[str, list[float]] = {"bare": [], "eager": [], "fused": []}
        for _ in range(a.rounds):
            for name, fn in (("bare", bare), ("eager", eager), ("fused", fused)):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        wall = {k: statistics.median(v) * 1000 for k, v in times.items()}
        ops = {}
        for name, fn in (("bare", bare), ("fused", fused)):
            with profile(activities=[ProfilerActivity.CPU]) as p:
                for _ in range(10):
                    fn()
            ops[name] = {e.key: e.self_cpu_time_total / 10 / 1000 for e in p.key_averages()}
    op_total = {k: sum(v.values()) for k, v in ops.items()}
    print(f"{a.model} {a.shape}, {a.threads} thread(s), {a.rounds} interleaved rounds: "
          f"bare SDPA {wall['bare']:.1f} ms, bare eager {wall['eager']:.1f} ms ({wall['eager'] / wall['bare']:.3f}x), "
          f"{a.route} census {wall['fused']:.1f} ms, ratio {wall['fused'] / wall['bare']:.3f} "
          f"({wall['fused'] / wall['eager']:.3f}x the eager forward)")
    print(f"  time in torch operators: bare {op_total['bare']:.1f} ms, fused {op_total['fused']:.1f} ms "
          f"(+{op_total['fused'] - op_total['bare']:.1f} ms); the rest of the gap is Python: "
          f"{(wall['fused'] - wall['bare']) - (op_total['fused'] - op_total['bare']):+.1f} ms")
    names = set(ops["bare"]) | set(ops["fused"])
    diff = sorted(((ops["fused"].get(k, 0.0) - ops["bare"].get(k, 0.0), k) for k in names), reverse=True)
    for d, k in diff[: a.top]:
        print(f"  {d:+6.2f} ms  {k}")


if __name__ == "__main__":
    main()
