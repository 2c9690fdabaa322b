"""The README's induction walkthrough, timed as one: find smollm2-135m's induction heads with the repeat probe,
ablate the top one against 100 matched random head sets on the second copy, and read what it means. Each command
runs in a fresh process as a user types it (model load, parsing and writing included); the target is the whole
walkthrough in under 10 minutes on the project machine, the ablation on 32 sequences of 64 tokens (2,048 tokens,
the size the target was set at; ``--samples 48`` is ablate's default, 3,072 tokens).

    .venv/bin/python bench/walkthrough.py [--draws 100] [--samples 32] [--out results/walkthrough]

Writes ``OUT/walkthrough.json`` (each command, its wall time and the lines a reader needs) and ``OUT/walkthrough.md``.
The head ablated is the scan's top induction head, read from its ``heads.csv``, not typed in.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent / "headlab"
MODEL = "smollm2-135m"
TARGET_S = 600


def run(args: list[str]) -> tuple[float, str]:
    """Wall seconds and stdout of one command in a fresh process (stderr is the user's progress, left out)."""
    t0 = time.perf_counter()
    done = subprocess.run([str(BIN), *args], check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return time.perf_counter() - t0, done.stdout


def top_head(heads_csv: Path, score: str) -> str:
    with heads_csv.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    best = max(rows, key=lambda r: float(r[score]))
    return f"{best['layer']}.{best['head']}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--samples", type=int, default=32, help="ablate's --samples (sequences of 64 tokens)")
    ap.add_argument("--out", type=Path, default=Path("results/walkthrough"))
    a = ap.parse_args()
    steps = []
    with tempfile.TemporaryDirectory() as work:
        scan_out = Path(work) / "repeat"
        scan = ["scan", MODEL, "--stimuli", "repeat", "--max-samples", "64", "--out", str(scan_out), "--no-progress"]
        seconds, text = run(scan)
        head = top_head(scan_out / "heads.csv", "induction")
        steps.append({"command": "headlab " + " ".join(scan[:-3] + ["--out", "runs/repeat"]), "seconds": seconds,
                      "reading": [line for line in text.splitlines() if "induction" in line][:3],
                      "top_induction_head": head})
        ablate = ["ablate", MODEL, "--heads", head, "--positions", "repeat", "--draws", str(a.draws), "--samples",
                  str(a.samples), "--out",
                  str(Path(work) / "ablate"), "--no-progress"]
        seconds, text = run(ablate)
        steps.append({"command": "headlab " + " ".join(ablate[:-3]), "seconds": seconds,
                      "reading": [line.strip() for line in text.splitlines() if "control" in line or "p =" in line]})
    total = sum(s["seconds"] for s in steps)
    record = {"date": datetime.date.today().isoformat(), "command": " ".join(["python", *sys.argv]),
              "model": MODEL, "draws": a.draws, "samples": a.samples, "steps": steps, "total_s": total,
              "target_s": TARGET_S, "met": total < TARGET_S}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "walkthrough.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    lines = [f"# The induction walkthrough, timed ({record['date']})", "", f"Command: `{record['command']}`", "",
             "| step | wall, s |", "|---|---|"]
    lines += [f"| `{s['command']}` | {s['seconds']:.0f} |" for s in steps]
    lines += [f"| **all** | **{total:.0f}** (target {TARGET_S}: {'met' if record['met'] else 'not met'}) |", ""]
    for s in steps:
        lines += [f"`{s['command']}` printed:", "", "```", *s["reading"], "```", ""]
    (a.out / "walkthrough.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
