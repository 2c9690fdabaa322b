"""What batching the controls of an ablation could save on this machine: the cost of one condition (a forward of
the model with its language-model head over the experiment's tokens) when k conditions run as one forward of k
times the batch, against k forwards of one batch, for smollm2-135m on 32 sequences of 64 tokens (the
walkthrough's 2,048 tokens), float32, interleaved rounds in one process. A batched control would stack k ablated
copies of the batch in one forward; its ceiling is this ratio, whatever the ablation does to each copy.

    .venv/bin/python bench/batched_controls.py [--k 1 2 4] [--rounds 3] [--threads 2] [--out FILE.json]
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

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from headlab.ablation.metrics import load_for_metric  # noqa: E402  (after the offline switch)
from headlab.corpus import repeat_probe  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--k", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    lm = load_for_metric(a.model)
    ids = torch.tensor([list(s.input_ids) for s in repeat_probe(lm.tokenizer, a.samples, a.window, 0)])  # (B, T)

    def conditions(k: int) -> None:
        with torch.inference_mode():
            lm.model(input_ids=ids.repeat(k, 1), use_cache=False)  # (k·B, T): k conditions in one forward

    times: dict[int, list[float]] = {k: [] for k in a.k}
    for k in a.k:
        conditions(k)  # warm-up
    for _ in range(a.rounds):
        for k in a.k:
            t0 = time.perf_counter()
            conditions(k)
            times[k].append((time.perf_counter() - t0) / k)
    per = {k: statistics.median(v) for k, v in times.items()}
    rows = [{"k": k, "seconds_per_condition": per[k], "ratio_to_one": per[k] / per[a.k[0]]} for k in a.k]
    print(f"{a.model}, {a.samples} x {a.window} tokens, {a.threads} threads, median of {a.rounds}:")
    for r in rows:
        print(f"  k = {r['k']}: {r['seconds_per_condition']:.2f} s a condition "
              f"({r['ratio_to_one']:.3f}x one at a time)")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"command": " ".join(["python", *sys.argv]), "model": a.model,
                                     "tokens": a.samples * a.window, "threads": a.threads, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
