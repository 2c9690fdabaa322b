"""Benchmark: head scores at long context, by capture route, against bare forwards measured in the same run.

One real long document (Python's ``library/stdtypes`` documentation, Debian ``python3.11-doc``), its first T
tokens (``--batch B``: its first B windows of T tokens), the default detectors. Each (configuration, T) runs
in a fresh subprocess, so peak memory is its own:
  (a) bare SDPA forward (the floor: what the model costs with a fused kernel and no attention output);
  (b) bare eager forward;
  (c) ``output_attentions=True``, then the same scores from the returned (L x (B, H, T, T)) tensors in Python
      (what peers do); skipped where its tensors alone exceed --max-gb;
  (d) headlab, ``eager`` route; (e) headlab, ``fused`` route; (f) headlab, ``chunked`` route;
  (g) headlab, ``fused`` route, without the two token-match detectors (duplicate-token, induction).
Rounds are interleaved (a, b, ..., g, then again), so drift of the machine's speed hits every configuration
alike. Prints time (median over rounds) and peak RSS during the forward (sampled every 5 ms; on CUDA the peak
allocated memory; the largest over rounds), and the ratios to (a). Targets: (e)/(a) <= 1.10 in time at every
T; (e)'s peak within 10% of (a)'s; (f)'s peak never above (b)'s by more than its chunk budget.

    .venv/bin/python bench/long_context.py [--model smollm2-135m] [--lengths 128 512 2048 8192] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

CONFIGS = {
    "a": "bare sdpa",
    "b": "bare eager",
    "c": "output_attentions + python",
    "d": "headlab eager",
    "e": "headlab fused",
    "f": "headlab chunked",
    "g": "headlab fused, no token matches",
}
#: (g): the default detectors less duplicate-token and induction, to separate the kernel route's own cost from
#: the cost of the token-match sums (which grow with the squared size of each repeated token's group).
NO_MATCHES = ("token", "offset", "previous-token", "sink")
DOC = "library/stdtypes.rst.txt"


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRSS(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self._done = rss_mb(), threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, rss_mb())
            time.sleep(0.005)

    def __enter__(self) -> "PeakRSS":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self.join()
        self.peak = max(self.peak, rss_mb())


def document() -> str:
    roots = sorted(Path("/usr/share/doc").glob("python3*/html/_sources"))
    if not roots:
        sys.exit("bench/long_context.py needs Debian's python3.11-doc (make test installs it)")
    return (roots[-1] / DOC).read_text(encoding="utf-8")


def one(model: str, config: str, T: int, repeats: int, device: str, chunk_mb: float, batch_size: int = 1,
        dtype: str = "float32") -> dict:
    """Runs in the subprocess: time and peak memory of one configuration at one length."""
    import torch

    from headlab import load
    from headlab.attention.routes import score_layer
    from headlab.census.engine import collate, forward, score_batches
    from headlab.corpus import Sample
    from headlab.detectors import DEFAULT_DETECTORS, make, prepare_batch

    lm = load(model, device=device, dtype=dtype)  # every configuration in the same dtype, the SDPA floor too
    ids = lm.tokenizer(document(), add_special_tokens=False)["input_ids"]
    if len(ids) < T * batch_size:
        sys.exit(f"the document has only {len(ids)} tokens, fewer than T x batch = {T * batch_size}")
    windows = [tuple(ids[b * T : (b + 1) * T]) for b in range(batch_size)]  # consecutive windows of the document
    dev = torch.device(device)
    dets = [make(n) for n in (NO_MATCHES if config == "g" else DEFAULT_DETECTORS)]
    for d in dets:
        d.bind(lm)

    def batch():
        return collate([Sample(b, "doc", b, w) for b, w in enumerate(windows)], lm.pad_id, lm.facts.causal, dev)

    def run() -> None:
        with torch.inference_mode():
            if config in "ab":
                lm.model.set_attn_implementation("sdpa" if config == "a" else "eager")
                forward(lm, batch())
            elif config == "c":
                b = batch()
                out = lm.model(input_ids=b.input_ids, attention_mask=b.attention_mask.long(), output_attentions=True)
                prepare_batch(dets, b)
                [score_layer(dets, a, b) for a in out.attentions]
            else:
                list(
                    score_batches(
                        lm,
                        dets,
                        [batch()],
                        {"d": "eager", "e": "fused", "f": "chunked", "g": "fused"}[config],
                        chunk_mb,
                    )
                )
        lm.model.set_attn_implementation("eager")

    if T <= 2048:
        run()  # warm-up
    times, peaks = [], []
    for _ in range(repeats):
        if dev.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        with PeakRSS() as mem:
            t0 = time.perf_counter()
            run()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        peaks.append(torch.cuda.max_memory_allocated() / 2**20 if dev.type == "cuda" else mem.peak)
    return {"config": config, "T": T, "seconds": statistics.median(times), "peak_mb": max(peaks), "repeats": repeats}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 2048, 8192])
    ap.add_argument("--configs", default="abcdefg")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=1, help="windows per forward (consecutive windows of the document)")
    ap.add_argument("--chunk-mb", type=float, default=256.0)
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    ap.add_argument("--max-gb", type=float, default=16.0, help="skip (c) where its attention tensors exceed this")
    ap.add_argument("--rounds", type=int, default=0, help="interleaved rounds (default 5 up to T=512, else 3)")
    ap.add_argument("--json", default=None, help="also write the rows here")
    ap.add_argument("--_one", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._one:
        print(json.dumps(one(a.model, a._one[0], int(a._one[1]), int(a._one[2]), a.device, a.chunk_mb, a.batch,
                             a.dtype)))
        return
    rows = []
    print(f"{a.model}, batch {a.batch}, T tokens of {DOC}, device {a.device}, {a.dtype}, "
          f"chunk budget {a.chunk_mb:g} MB")
    for T in a.lengths:
        rounds = a.rounds or (5 if T <= 512 else 3)
        configs = list(a.configs)
        if "c" in configs:
            layers, heads = _facts(a.model)
            gb = a.batch * layers * heads * T * T * 4 / 2**30
            if gb > a.max_gb:
                print(f"  T={T:5d} (c) {CONFIGS['c']:<28} skipped: its attention tensors alone are {gb:.1f} GB")
                configs.remove("c")
        runs: dict[str, list[dict]] = {c: [] for c in configs}
        for _ in range(rounds):
            for c in configs:
                cmd = [
                    sys.executable,
                    __file__,
                    "--model",
                    a.model,
                    "--device",
                    a.device,
                    "--chunk-mb",
                    str(a.chunk_mb),
                    "--batch",
                    str(a.batch),
                    "--dtype",
                    a.dtype,
                    "--_one",
                    c,
                    str(T),
                    "1",
                ]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    err = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode
                    print(f"  T={T:5d} ({c}) failed: {err}")
                    continue
                runs[c].append(json.loads(out.stdout.strip().splitlines()[-1]))
        got = {
            c: {
                "config": c,
                "T": T,
                "seconds": statistics.median(r["seconds"] for r in rs),
                "peak_mb": max(r["peak_mb"] for r in rs),
                "rounds": len(rs),
                "all_seconds": [round(r["seconds"], 3) for r in rs],
            }
            for c, rs in runs.items()
            if rs
        }
        base = got.get("a")
        for c, r in got.items():
            ratio = (
                f"  time {r['seconds'] / base['seconds']:.3f}x  peak {r['peak_mb'] / base['peak_mb']:.3f}x"
                if base
                else ""
            )
            print(
                f"  T={T:5d} ({c}) {CONFIGS[c]:<31} {r['seconds']:8.3f} s  peak {r['peak_mb']:8.0f} MB{ratio}",
                flush=True,
            )
            rows.append({**r, "model": a.model, "device": a.device, "dtype": a.dtype, "label": CONFIGS[c]})
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


def _facts(model: str) -> tuple[int, int]:
    """(layers, heads) from the model's config without loading weights."""
    from transformers import AutoConfig

    from headlab.models import NAMED_MODELS

    spec = NAMED_MODELS.get(model)
    path = spec.locate() if spec is not None else model
    cfg = AutoConfig.from_pretrained(str(path))
    cfg = getattr(cfg, "text_config", None) or cfg
    return cfg.num_hidden_layers, cfg.num_attention_heads


if __name__ == "__main__":
    main()
