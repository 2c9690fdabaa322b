"""Benchmark: the exact single-head ablation sweep vs the naive one, and the cost of gradient importance.

Measured in one run, on the same batches:
  plain:    one plain forward pass over all batches (the unit of "forward-equivalents");
  naive:    one full forward per head and batch, the head zero-ablated (``naive_sweep``);
  exact:    headlab's sweep (``exact_sweep``): the plain layers below the ablated one replayed, the heads of
            one layer stacked into one pass;
  gradient: Michel et al. gate gradients, one forward and backward per batch (decoders only).
Checks that naive and exact agree, then prints naive/exact time and gradient time in forward-equivalents.
Targets: exact at least 2x faster than naive; gradient at most 3 forward-equivalents.

    .venv/bin/python bench/ablation_sweep.py [--model minilm-l6] [--samples 32] [--window 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from headlab.ablation.importance import gradient_importance, primary_metric  # noqa: E402
from headlab.ablation.metrics import load_for_metric, metric_batches, reference_hidden  # noqa: E402
from headlab.ablation.sweep import exact_sweep, naive_sweep  # noqa: E402


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="minilm-l6")
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3, help="plain-forward and gradient timings: best of N")
    a = ap.parse_args()

    loaded = load_for_metric(a.model)
    f = loaded.facts
    batches = metric_batches(loaded, a.samples, a.window, 0, a.batch, None)  # the default corpus
    ref = reference_hidden(loaded, batches)
    n_tok = int(sum(int(b.attention_mask.sum()) for b in batches))
    print(f"model {loaded.name} ({f.n_layers}x{f.n_heads} heads), {a.samples} windows of {a.window} tokens "
          f"({n_tok} tokens), batch {a.batch}, torch threads {torch.get_num_threads()}")

    def plain():
        with torch.inference_mode():
            for i, b in enumerate(batches):
                primary_metric(loaded, b, None if ref is None else ref[i])

    t_plain = min(timed(plain)[0] for _ in range(a.repeats))
    t_naive, naive = timed(lambda: naive_sweep(loaded, batches, ref, primary_metric, progress=False))
    t_exact, exact = timed(lambda: exact_sweep(loaded, batches, ref, primary_metric, progress=False))
    diff = float(np.abs(exact - naive).max())
    print(f"  plain forward {t_plain:8.2f} s")
    print(f"  naive sweep   {t_naive:8.2f} s  ({t_naive / t_plain:6.1f} forward-equivalents, "
          f"{f.n_layers * f.n_heads} heads)")
    print(f"  exact sweep   {t_exact:8.2f} s  ({t_exact / t_plain:6.1f} forward-equivalents)")
    print(f"  max |exact - naive| = {diff:.2e} (metric units)")
    print(f"  ratio naive/exact time: {t_naive / t_exact:.2f}x  (target >= 2)")
    if f.causal:
        times = [timed(lambda: gradient_importance(loaded, batches))[0] for _ in range(a.repeats)]
        print(f"  gradient      {min(times):8.2f} s  (best of {a.repeats}, median {statistics.median(times):.2f} s)")
        print(f"  gradient in forward-equivalents: {min(times) / t_plain:.2f}  (target <= 3)")
    else:
        print("  gradient: not applicable (encoder without a language-model head: no loss)")
    return 0 if diff < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
