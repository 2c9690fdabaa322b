"""Benchmark: streaming head census vs a bare forward and vs the naive output_attentions route.

Measured in one run, on the same texts, the same windows and the same batches:
  (a) bare:   forward with eager attention and no attention output (the floor);
  (b) naive:  forward with output_attentions=True, then the same per-head scores computed head by head
              and sample by sample in Python (what detect_head-style code does);
  (c) headlab: headlab.scan with all default detectors (tokenizing, capture, reducers, statistics).
Prints tokens/s of each, the ratios (c)/(a) and (c)/(b) in time, and peak RSS of (c) at 1x and 10x samples
(each in a fresh subprocess). Targets: (c)/(a) <= 1.15; peak memory grows < 10% from 1x to 10x.

    .venv/bin/python bench/scan_throughput.py [--model minilm-l6] [--samples 512] [--repeats 5]
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

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from headlab import load, scan  # noqa: E402
from headlab.census.engine import CHUNK_BATCHES, collate, forward  # noqa: E402
from headlab.corpus import Sampler, documents  # noqa: E402
from headlab.detectors import DEFAULT_DETECTORS  # noqa: E402

LABEL = {"bare": "a", "naive": "b", "headlab": "c"}


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRSS(threading.Thread):
    """Samples resident memory every 5 ms while a block runs (ru_maxrss would be the model load's peak)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak, self._done = rss_mb(), threading.Event()

    def run(self):
        while not self._done.is_set():
            self.peak = max(self.peak, rss_mb())
            time.sleep(0.005)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self.join()


def corpus_texts(loaded, n, window, seed=0):
    """n windows of the default corpus, decoded back to text so every route starts from strings."""
    docs = documents(None)
    sampler = Sampler(loaded.tokenizer, window, seed=seed)
    sp = sampler.special
    return [loaded.tokenizer.decode(list(s.input_ids[len(sp.prefix): len(s.input_ids) - len(sp.suffix)]))
            for s in sampler.samples(docs, n)]


def batches(loaded, texts, window, batch_size):
    from headlab.corpus import Document

    docs = [Document(f"t{i}", lambda t=t: [t]) for i, t in enumerate(texts)]
    samples = list(Sampler(loaded.tokenizer, window, seed=0).samples(docs))
    chunk = batch_size * CHUNK_BATCHES
    for c in range(0, len(samples), chunk):
        part = sorted(samples[c:c + chunk], key=lambda s: -len(s.input_ids))
        for b in range(0, len(part), batch_size):
            yield collate(part[b:b + batch_size], loaded.pad_id, loaded.facts.causal, torch.device("cpu"))


def run_bare(loaded, texts, window, bs):
    n = 0
    with torch.inference_mode():
        for batch in batches(loaded, texts, window, bs):
            forward(loaded, batch)
            n += int(batch.attention_mask.sum())
    return n


def run_naive(loaded, texts, window, bs, target_ids, max_offset=8):
    n = 0
    tgt_ids = torch.tensor(sorted(target_ids))
    with torch.inference_mode():
        for batch in batches(loaded, texts, window, bs):
            out = loaded.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask.long(),
                               output_attentions=True)
            lengths = batch.attention_mask.sum(-1).tolist()
            for layer_attn in out.attentions:
                for h in range(layer_attn.shape[1]):
                    for b, T in enumerate(lengths):
                        a = layer_attn[b, h, :T, :T]
                        ids = batch.input_ids[b, :T]
                        tgt = torch.isin(ids, tgt_ids).float()
                        _ = (a @ tgt).mean().item()                                   # token
                        _ = [a.diagonal(-d).mean().item() for d in range(min(max_offset + 1, T))]  # offset
                        eq = (ids[:, None] == ids[None, :]).float().tril(-1)
                        _ = ((a * eq).sum() / T).item()                               # duplicate
                        ind = torch.zeros(T, T)
                        ind[:, 1:] = (ids[:, None] == ids[None, :-1]).float()
                        _ = ((a * ind.tril()).sum() / T).item()                       # induction
                        _ = a[:, 0].mean().item()                                     # sink
            n += int(batch.attention_mask.sum())
    return n


def run_headlab(loaded, texts, window, bs):
    r = scan(loaded, texts, detectors=DEFAULT_DETECTORS, max_samples=None, batch_size=bs, max_length=window,
             progress=False)
    return r.n_tokens


def timed(fn, *args):
    t = time.perf_counter()
    n = fn(*args)
    return time.perf_counter() - t, n


def memory_child(model, n, window, bs):
    loaded = load(model)
    texts = corpus_texts(loaded, n, window)
    import gc

    gc.collect()
    base = rss_mb()
    with PeakRSS() as probe:
        run_headlab(loaded, texts, window, bs)
    print(json.dumps({"n": n, "peak_rss_mb": probe.peak, "before_scan_mb": base}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="minilm-l6")
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--memory-child", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    if a.memory_child:
        memory_child(a.model, a.memory_child, a.window, a.batch_size)
        return

    loaded = load(a.model)
    texts = corpus_texts(loaded, a.samples, a.window)
    target_ids = loaded.ids_containing("/")
    print(f"model {a.model}, {len(texts)} texts, window {a.window}, batch {a.batch_size}, "
          f"torch threads {torch.get_num_threads()}")
    run_bare(loaded, texts[:16], a.window, a.batch_size)  # warm-up
    best = {"bare": float("inf"), "headlab": float("inf"), "naive": float("inf")}
    tokens = 0
    pair_ratios = []
    for _ in range(a.repeats):  # interleaved: each (a, c) pair shares the machine's momentary load
        ta, tokens = timed(run_bare, loaded, texts, a.window, a.batch_size)
        tc, n = timed(run_headlab, loaded, texts, a.window, a.batch_size)
        assert n == tokens, (n, tokens)
        best["bare"], best["headlab"] = min(best["bare"], ta), min(best["headlab"], tc)
        pair_ratios.append(tc / ta)
    if not a.skip_naive:
        t, n = timed(run_naive, loaded, texts, a.window, a.batch_size, target_ids)
        best["naive"] = t
    for k, t in best.items():
        if t != float("inf"):
            print(f"  ({LABEL[k]}) {k:<8} {t:8.2f} s  {tokens / t:10.0f} tokens/s")
    print(f"  ratio (c)/(a) time: {best['headlab'] / best['bare']:.3f} best-of-{a.repeats}, "
          f"{statistics.median(pair_ratios):.3f} median of paired runs "
          f"({' '.join(f'{r:.3f}' for r in pair_ratios)})  (target <= 1.15)")
    if best["naive"] != float("inf"):
        ratio = best["headlab"] / best["naive"]
        print(f"  ratio (c)/(b) time: {ratio:.3f}  (naive is {1 / ratio:.1f}x slower)")

    # Peak RSS of (c) at 1x and 10x samples, each in a fresh process. Run twice: with glibc's default
    # allocator, and with MALLOC_ARENA_MAX=1, because torch's worker threads each grow a malloc arena that
    # fragments with the varying batch shapes (allocator growth, not data kept by headlab).
    for label, extra in (("default allocator", {}), ("MALLOC_ARENA_MAX=1", {"MALLOC_ARENA_MAX": "1"})):
        peaks = []
        for n in (a.samples, 10 * a.samples):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--model",
                    a.model,
                    "--window",
                    str(a.window),
                    "--batch-size",
                    str(a.batch_size),
                    "--memory-child",
                    str(n),
                ],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, **extra},
            )
            rec = json.loads(out.stdout.strip().splitlines()[-1])
            peaks.append(rec["peak_rss_mb"])
            print(
                f"  [{label}] peak RSS during the scan of {n:5d} samples: {rec['peak_rss_mb']:.0f} MB "
                f"(before the scan: {rec['before_scan_mb']:.0f} MB)"
            )
        print(f"  [{label}] peak memory growth 1x -> 10x: {100 * (peaks[1] / peaks[0] - 1):+.1f}%  (target < 10%)")


if __name__ == "__main__":
    main()
