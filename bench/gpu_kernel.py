"""Benchmark: one attention layer at a model's shape, three ways, on random inputs (bench/gpu_check.sh runs it):
  flash     ``scaled_dot_product_attention`` (the flash kernel where torch picks it): the floor;
  census    the Triton one-pass route (``headlab.attention.routes.triton_census``): the output and every sum
            the default detectors need (the ``/`` and sink key sets, diagonals 0..8, token matches at shifts 0
            and 1, Σ p log p), grouped K/V read in place;
  probs     the eager path every peer reads: softmax(q kᵀ) materialized, then p @ v (``output_attentions``'s
            cost for one layer), "out of memory" where it does not fit.
Time is the median of --rounds after one warm-up, memory the peak allocated during the call beyond the inputs;
ratios are against ``flash`` in the same process. Writes rows as JSON (--json) and a Markdown table (--markdown).

    python bench/gpu_kernel.py --device cuda --lengths 2048 8192 32768
    TRITON_INTERPRET=1 python bench/gpu_kernel.py --dry-run   # CPU, the interpreter, T = 64: what make test runs
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

#: (heads, kv heads, head dim) of the shapes the GPU targets name
SHAPES = {"llama3-8b": (32, 8, 128), "smollm2-135m": (9, 3, 64), "bert-base": (12, 12, 64)}


def _inputs(shape: str, T: int, batch: int, device: str, dtype: torch.dtype) -> dict[str, Any]:
    H, Hkv, D = SHAPES[shape]
    g = torch.Generator(device="cpu").manual_seed(0)
    q, k, v = (torch.randn(batch, h, T, D, generator=g).to(device, dtype) for h in (H, Hkv, Hkv))
    ids = torch.randint(0, 2000, (batch, T), generator=g).to(device)
    keys = torch.stack([ids == 7, torch.arange(T, device=device)[None].expand(batch, T) == 0], -1).float()
    return {"q": q, "k": k, "v": v, "ids": ids, "keys": keys, "causal": shape != "bert-base"}


def _ways(x: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    from headlab.attention.routes.triton_census import census_attention

    q, k, v, causal = x["q"], x["k"], x["v"], x["causal"]
    scale = q.shape[-1] ** -0.5
    g = q.shape[1] // k.shape[1]

    def probs() -> Any:
        kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        s = (q @ kk.transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        p = s.softmax(-1)
        return p @ vv, p

    return {
        "flash": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=g > 1),
        "census": lambda: census_attention(q, k, v, scale=scale, causal=causal, keys=x["keys"], band=8,
                                           ids=x["ids"], shifts=(0, 1)),
        "probs": probs,
    }


def _time(fn: Callable[[], Any], device: str, rounds: int) -> tuple[float, float]:
    """(median seconds, peak bytes allocated beyond what was held before) of ``fn``."""
    cuda = device.startswith("cuda")
    fn()  # warm-up: compilation, autotuning
    times, peak = [], 0.0
    for _ in range(rounds):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            held = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        out = fn()
        if cuda:
            torch.cuda.synchronize()
            peak = max(peak, torch.cuda.max_memory_allocated() - held)
        times.append(time.perf_counter() - t0)
        del out
    return statistics.median(times), peak


def run(shapes: list[str], lengths: list[int], batch: int, device: str, dtype: torch.dtype, rounds: int
        ) -> list[dict[str, Any]]:
    rows = []
    for shape in shapes:
        for T in lengths:
            x = _inputs(shape, T, batch, device, dtype)
            row: dict[str, Any] = {"shape": shape, "T": T, "batch": batch, "dtype": str(dtype).split(".")[-1]}
            for name, fn in _ways(x).items():
                try:
                    row[f"{name}_s"], row[f"{name}_bytes"] = _time(fn, device, rounds)
                except torch.OutOfMemoryError:
                    row[f"{name}_s"] = row[f"{name}_bytes"] = "out of memory"
                    torch.cuda.empty_cache()
            for name in ("census", "probs"):
                if isinstance(row[f"{name}_s"], float):
                    row[f"{name}_x"] = row[f"{name}_s"] / row["flash_s"]
            rows.append(row)
            print(json.dumps(row), flush=True)
            del x
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    def cell(r: dict[str, Any], name: str) -> str:
        return f"{r[name + '_x']:.2f}x" if name + "_x" in r else str(r[name + "_s"])

    out = ["| shape | T | batch | dtype | flash ms | census / flash | probs / flash | census MiB | flash MiB |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        mib = [f"{r[n + '_bytes'] / 2**20:.0f}" if isinstance(r[n + "_bytes"], float) else "–"
               for n in ("census", "flash")]
        out.append(f"| {r['shape']} | {r['T']} | {r['batch']} | {r['dtype']} | {1e3 * r['flash_s']:.2f} | "
                   f"{cell(r, 'census')} | {cell(r, 'probs')} | {mib[0]} | {mib[1]} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--shapes", nargs="+", default=["llama3-8b"], choices=sorted(SHAPES))
    ap.add_argument("--lengths", nargs="+", type=int, default=[2048, 8192, 32768])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--dry-run", action="store_true", help="CPU, Triton's interpreter, T = 64, one round, fp32")
    a = ap.parse_args(argv)
    if a.dry_run:
        if os.environ.get("TRITON_INTERPRET") != "1":
            print("--dry-run runs Triton's interpreter: set TRITON_INTERPRET=1", file=sys.stderr)
            return 2
        a.device, a.lengths, a.rounds, a.shapes = "cpu", [64], 1, ["smollm2-135m"]
    dtype = torch.float32 if a.device == "cpu" else torch.bfloat16
    rows = run(a.shapes, a.lengths, a.batch, a.device, dtype, a.rounds)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    if a.markdown:
        Path(a.markdown).write_text(markdown(rows))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
