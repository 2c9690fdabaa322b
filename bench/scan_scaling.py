"""Benchmark: the census across processes, with per-sample export and checkpoints, against a plain scan.

Every configuration is one ``headlab scan`` command in a fresh process tree, over the same seeded samples of the
default corpus (wiki + pydoc), default detectors; wall time and the peak RSS of the largest process:
  (a) 1 process x 2 threads                      (the baseline)
  (b) 2 processes x 1 thread (torchrun, gloo)    target: throughput ratio (b)/(a) near 1.0
  (c) (a) + --per-sample FILE.parquet            target: <= 5% over (a)
  (d) (a) + --checkpoint-every 128               the cost of one checkpoint, and its share at the default 2048
  (e) (c) at 10x the samples                     peak memory: flat in corpus size
Rounds are interleaved (a, b, c, d, then again) so drift hits every configuration alike; medians are printed.

    .venv/bin/python bench/scan_scaling.py [--model minilm-l6] [--samples 512] [--rounds 3] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# a fresh parent per command: RUSAGE_CHILDREN's peak is then that command's largest process, not a running max
_MEASURE = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "sys.stderr.write(r.stderr[-2000:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)")


def run(cmd: list[str], threads: int) -> tuple[float, float]:
    """Wall seconds and the peak RSS (MB) of the largest process the command started."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return wall, int(r.stdout.strip().splitlines()[-1]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="minilm-l6")
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="scan-scaling-"))
    py = [sys.executable, "-m"]
    tr = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m"]

    def scan(n: int, out: str, *extra: str) -> list[str]:
        return ["headlab", "scan", a.model, "--max-samples", str(n), "--device", a.device, "--no-progress",
                "--out", str(tmp / out), "--overwrite", *extra]

    configs = {
        "a": (py + scan(a.samples, "a"), 2),
        "b": (tr + scan(a.samples, "b"), 1),
        "c": (py + scan(a.samples, "c", "--per-sample", str(tmp / "c.parquet")), 2),
        "d": (py + scan(a.samples, "d", "--checkpoint-every", "128"), 2),
    }
    times: dict[str, list[float]] = {k: [] for k in configs}
    peaks: dict[str, float] = {}
    print(f"headlab scan scaling: {a.model}, {a.samples} samples, {a.rounds} interleaved rounds, "
          f"{os.cpu_count()} CPUs, device {a.device}", flush=True)
    for rnd in range(a.rounds):
        for k, (cmd, threads) in configs.items():
            if k == "d":
                shutil.rmtree(tmp / "d", ignore_errors=True)  # a finished scan drops its checkpoint; start clean
            wall, peak = run(cmd, threads)
            times[k].append(wall)
            peaks[k] = max(peaks.get(k, 0.0), peak)
            print(f"  round {rnd + 1} ({k}) {wall:.1f} s, peak {peak:.0f} MB", flush=True)
    big = py + scan(10 * a.samples, "e", "--per-sample", str(tmp / "e.parquet"))
    wall_e, peak_e = run(big, 2)
    med = {k: statistics.median(v) for k, v in times.items()}
    per_ckpt = (med["d"] - med["a"]) / max(1, a.samples // 128)
    per_sample_s = med["a"] / a.samples
    result = {
        "model": a.model, "samples": a.samples, "rounds": a.rounds, "device": a.device,
        "median_s": med, "peak_mb": peaks,
        "ratio_b_over_a_throughput": med["a"] / med["b"],
        "per_sample_overhead": med["c"] / med["a"] - 1,
        "checkpoint_s": per_ckpt,
        "checkpoint_share_at_default_2048": per_ckpt / (2048 * per_sample_s),
        "peak_mb_1x_per_sample": peaks["c"], "peak_mb_10x_per_sample": peak_e, "wall_s_10x": wall_e,
    }
    print(f"  (a) 1 proc x 2 threads   {med['a']:.1f} s  ({a.samples / med['a']:.1f} samples/s)")
    ratio = result["ratio_b_over_a_throughput"]
    print(f"  (b) 2 procs x 1 thread   {med['b']:.1f} s  throughput ratio (b)/(a) {ratio:.3f}")
    print(f"  (c) + per-sample Parquet {med['c']:.1f} s  overhead {100 * result['per_sample_overhead']:+.1f}%")
    print(f"  (d) + checkpoint / 128   {med['d']:.1f} s  {per_ckpt * 1000:.0f} ms per checkpoint: "
          f"{100 * result['checkpoint_share_at_default_2048']:.2f}% at the default interval of 2048")
    print(f"  (e) 10x samples + Parquet peak {peak_e:.0f} MB vs {peaks['c']:.0f} MB at 1x ({wall_e:.1f} s)")
    print(json.dumps(result))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
