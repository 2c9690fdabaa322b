"""How soon the command line answers. ``headlab --help`` and ``headlab scan --help``: the first call (the parser
built, every command's module and torch imported) against a later one (the kept text printed), in fresh processes
with an empty cache folder; ``import headlab`` alone; ``headlab --version``; and a model argument that names no model
(a missing path, a typo of a named model, an unknown name offline), refused before the parser is built, against the
same refusal through the parser (``python -m headlab.cli``, the entry torchrun uses, which builds it first).
Targets: a later help call and a refusal under 1 s, ``--version`` under 0.5 s.

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


def seconds(cmd: list[str], env: dict[str, str], code: int = 0) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t0
    if r.returncode != code:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}, expected {code}: {r.stderr.strip()}")
    return took


#: model arguments that name no model: each is refused with exit 2
REFUSED = {"a missing path": "./no/such/model", "a named model mistyped": "minilm-l7",
           "an unknown name (offline)": "no-such-model-xyz"}


def refusals(rounds: int) -> list[tuple[str, float, float]]:
    """(case, before the parser, through the parser) medians, in seconds."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = []
    for case, model in REFUSED.items():
        args = ["scan", model, "--out", os.devnull + "-out"]
        early = [seconds([str(BIN), *args], env, 2) for _ in range(rounds)]
        parsed = [seconds([sys.executable, "-m", "headlab.cli", *args], env, 2) for _ in range(rounds)]
        out.append((case, statistics.median(early), statistics.median(parsed)))
    return out


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
    version = statistics.median(seconds([str(BIN), "--version"], dict(os.environ)) for _ in range(a.rounds))
    print(f"\n| headlab --version | {version:.2f} s |\n|---|---|")
    print("\n| headlab scan MODEL, refused | before the parser, s | through the parser, s | ratio |")
    print("|---|---|---|---|")
    for case, early, parsed in refusals(a.rounds):
        print(f"| {case} | {early:.2f} | {parsed:.2f} | {early / parsed:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
