"""``headlab --help`` and ``headlab scan --help``: the first call (the parser built, every command's module and torch
imported) against a later one (the kept text printed), in fresh processes with an empty cache folder; and
``import headlab`` alone. Target: a later call under 1 s.

    .venv/bin/python bench/cli_help.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent / "headlab"


def seconds(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    rows = []
    for args in (["--help"], ["scan", "--help"]):
        first, later = [], []
        for _ in range(a.rounds):
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "HEADLAB_CACHE": cache}
                first.append(seconds([str(BIN), *args], env))
                later.append(seconds([str(BIN), *args], env))
        rows.append((" ".join(args), statistics.median(first), statistics.median(later)))
    imp = statistics.median(seconds([sys.executable, "-c", "import headlab"], dict(os.environ))
                            for _ in range(a.rounds))
    print(f"| call | first, s | later, s | ratio |  (median of {a.rounds} fresh processes)")
    print("|---|---|---|---|")
    for name, f, l in rows:
        print(f"| headlab {name} | {f:.2f} | {l:.2f} | {l / f:.3f} |")
    print(f"| python -c 'import headlab' | {imp:.2f} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
