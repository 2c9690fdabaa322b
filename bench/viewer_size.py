"""Benchmark: the viewer's file size and load time on a long input, against an inline-everything baseline.

For one model and one text of ``--tokens`` tokens from the default corpus, in one run:
  (a) baseline size: every head's full map as a JSON array of floats rounded to 4 decimals (what viewers that
      inline every attention tensor ship); measured on ``--sample-heads`` heads and scaled to all heads;
  (b) headlab: the page ``headlab view`` writes (8-bit sqrt maps, deflate, base64, lower triangle if causal).
Prints both sizes and the ratio (a)/(b), the time to build the page, and, in headless Chromium, the time until
the page is ready and the time from a click on a head to its map drawn (median of 5 heads).

    .venv/bin/python bench/viewer_size.py [--model smollm2-135m] [--tokens 1024] [--scale sqrt|linear]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from headlab import load  # noqa: E402
from headlab.corpus import DEFAULT_CORPUS, documents  # noqa: E402
from headlab.viewer import ViewData, write_html  # noqa: E402
from headlab.views.codec import quantize  # noqa: E402
from headlab.views.data import capture_maps, text_sample  # noqa: E402


def long_text(loaded, n_tokens: int) -> str:
    tok = loaded.tokenizer
    ids: list[int] = []
    for doc in documents(list(DEFAULT_CORPUS)):
        for text in doc.load():
            ids += tok(text + "\n", add_special_tokens=False)["input_ids"]
        if len(ids) > n_tokens:
            break
    budget = n_tokens - len(tok("x")["input_ids"]) + 1  # room for the special tokens
    while True:
        text = tok.decode(ids[:budget])
        if len(tok(text)["input_ids"]) <= n_tokens:
            return text
        budget -= 8


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--sample-heads", type=int, default=6)
    ap.add_argument("--scale", default="sqrt", help="sqrt (default) or linear")
    a = ap.parse_args()
    loaded = load(a.model)
    L, H = loaded.facts.n_layers, loaded.facts.n_heads
    sample = text_sample(loaded, long_text(loaded, a.tokens), "long corpus text")
    T = len(sample.ids)
    data = ViewData(title=f"bench {a.model}", subtitle="", kind="model", n_layers=L, n_heads=H,
                    causal=loaded.facts.causal, samples=[sample], steps=[None],
                    scores=[{"zeros": np.zeros((L, H))}], scale=a.scale)
    baseline_bytes = []
    t0 = time.perf_counter()

    def sink(layer: int, head: int, m: np.ndarray) -> None:
        data.maps[(0, 0, layer, head)] = quantize(m, loaded.facts.causal, a.scale)
        if len(baseline_bytes) < a.sample_heads and head == 0:
            baseline_bytes.append(len(json.dumps(np.round(m.astype(float), 4).tolist())))

    capture_maps(loaded, sample.ids, sink)
    out = os.path.join(tempfile.mkdtemp(), "view.html")
    write_html(data, out)
    build_s = time.perf_counter() - t0
    size = os.path.getsize(out)
    base = statistics.mean(baseline_bytes) * L * H
    print(f"{a.model}: {L}x{H} = {L * H} heads, {T} tokens, causal={loaded.facts.causal}")
    print(f"  (a) inline float JSON (scaled from {len(baseline_bytes)} heads): {base / 1e6:.1f} MB")
    print(f"  (b) headlab page, {a.scale} scale: {size / 1e6:.2f} MB (capture + quantize + write {build_s:.1f} s)")
    print(f"  ratio (a)/(b): {base / size:.1f}x smaller")
    try:
        from headlab.viewer.browser import open_page
    except ImportError:
        print("  (no playwright: browser timings skipped)")
        return 0
    with open_page(out) as (page, log):
        clicks = []
        for l, h in [(0, 0), (L // 3, 1), (L // 2, H - 1), (L - 1, 0), (L - 1, H - 1)]:
            ms = page.evaluate(f"""async () => {{
                const t = performance.now(); document.getElementById('cell-{l}-{h}').click();
                const drawn = () => document.getElementById('map').dataset.head === '{l}.{h}';
                while (!drawn()) await new Promise(r => setTimeout(r, 5));
                return performance.now() - t; }}""")
            clicks.append(ms)
    print(
        f"  Chromium: ready {log['load_s']:.2f} s after navigation; click → map drawn median "
        f"{statistics.median(clicks):.0f} ms (max {max(clicks):.0f} ms); console errors "
        f"{len(log['console_errors'])}, requests {len(log['requests'])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
