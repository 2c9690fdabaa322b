"""Benchmark: a training pool's three corpus draws (probe, with-target, without-target windows) with one shared
token cache against each draw tokenizing on its own, as ``build_pool`` draws them.

Measured in one run, on the same tokenizer, documents and seeds; the two ways alternate over ``--repeats``
rounds, the best time of each is compared, and their windows must be equal. Target: the shared cache faster,
the windows identical.

    .venv/bin/python bench/pool_build.py [--config src/headlab/training/configs/induce.toml] [--repeats 2]
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from headlab.corpus import Sampler, documents  # noqa: E402
from headlab.nn.tokenizer import load_tokenizer, train_bpe  # noqa: E402
from headlab.training import load_config  # noqa: E402
from headlab.training.data import _texts, slash_ids  # noqa: E402


def draws(cfg, tokenizer, docs, shared: bool) -> list[list[tuple[int, ...]]]:
    """The three draws of ``build_pool`` (its sizes and seeds), with one cache or none."""
    cache: dict[str, list[int]] | None = {} if shared else None
    targets, n, seed = slash_ids(tokenizer), cfg.data.n_windows, cfg.optim.seed
    k = round(n * (cfg.data.slash_share or 0.0))
    plan = [("with-target", cfg.data.probe_windows, seed + 7919), ("with-target", k + cfg.data.probe_windows, seed),
            ("without-target", n - k, seed)]
    return [[x.input_ids for x in itertools.islice(
        Sampler(tokenizer, cfg.data.window, seed=s, target_ids=targets, target_filter=f,  # type: ignore[arg-type]
                cache=cache).samples(docs), m)] for f, m, s in plan]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="src/headlab/training/configs/induce.toml")
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    cfg = load_config(a.config)
    tok = cfg.data.tokenizer
    tokenizer = (train_bpe(_texts(cfg.data.corpus, cfg.data.tokenizer_chars), int(tok.split(":")[1]))
                 if tok.startswith("bpe:") else load_tokenizer(tok))
    docs = documents(cfg.data.corpus)
    best = {"separate": float("inf"), "shared": float("inf")}
    out = {}
    for _ in range(a.repeats):
        for way in best:
            t = time.perf_counter()
            out[way] = draws(cfg, tokenizer, docs, way == "shared")
            best[way] = min(best[way], time.perf_counter() - t)
    assert out["shared"] == out["separate"], "the shared cache changed the windows"
    sizes = [len(d) for d in out["shared"]]
    print(f"config {a.config}: corpus {', '.join(cfg.data.corpus)}, windows per draw {sizes}")
    print(f"separate tokenization: {best['separate']:.2f} s; shared cache: {best['shared']:.2f} s; "
          f"speed-up {best['separate'] / best['shared']:.2f}x; windows identical; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")


if __name__ == "__main__":
    main()
