"""Peak memory of the monitor's fingerprint step against the number of windows: streamed (``headlab.monitor``
reads the per-sample table in row batches of the feature columns) vs reading the whole table with pandas (how the
first monitor did it), each in a fresh process, on per-sample tables of N and 4N windows over the same documents.

    .venv/bin/python bench/monitor_memory.py [--windows 50000] [--features 120] [--docs 500]

Prints each process's peak RSS and the ratio 4N / N per method: flat memory reads ~1.0.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = """
import resource, sys
from pathlib import Path
method, path, n_features = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
features = [f"entropy/0.{i}" for i in range(n_features)]
if method == "streamed":
    from headlab.monitor.fingerprint import fingerprints
    X, docs, n = fingerprints(path, features)
else:
    import pandas as pd
    rows = pd.read_parquet(path)
    X = rows[["doc", *features]].fillna(0.0).groupby("doc", sort=True).mean().to_numpy()
print(X.shape[0], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def write_table(path: Path, windows: int, features: int, docs: int, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    names = [f"entropy/0.{i}" for i in range(features)]
    schema = pa.schema([("doc", pa.string()), ("ids", pa.list_(pa.int32()))] + [(n, pa.float32()) for n in names])
    with pq.ParquetWriter(path, schema) as w:
        for start in range(0, windows, 10_000):
            n = min(10_000, windows - start)
            cols = {"doc": [f"doc{d}" for d in rng.integers(0, docs, n)],
                    "ids": pa.array(list(rng.integers(0, 30_000, (n, 128), dtype=np.int32)), pa.list_(pa.int32()))}
            cols.update({c: rng.random(n, dtype=np.float32) for c in names})
            w.write_table(pa.table(cols, schema=schema))


def peak(method: str, path: Path, features: int) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, method, str(path), str(features)], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--windows", type=int, default=50_000)
    ap.add_argument("--features", type=int, default=120)
    ap.add_argument("--docs", type=int, default=500)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for k in (1, 4):
            paths[k] = Path(tmp) / f"rows{k}.parquet"
            write_table(paths[k], k * a.windows, a.features, a.docs)
        print(f"per-sample tables: {a.windows} and {4 * a.windows} windows of 128 token ids, {a.features} features, "
              f"{a.docs} documents")
        for method in ("streamed", "whole-table"):
            small, big = peak(method, paths[1], a.features), peak(method, paths[4], a.features)
            print(f"{method:<12} peak RSS {small:7.0f} MiB at N, {big:7.0f} MiB at 4N: ratio {big / small:.2f}")


if __name__ == "__main__":
    main()
