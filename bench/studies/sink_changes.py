"""The table of results/SINK_FIX.md: what the corrected sink detector changed in each committed scan.

Compares every scan below as committed at OLD (before the fix) with the file in the working tree; the other
detectors' scores must not move. Run from the repository root: python results/sink_changes.py
"""

from __future__ import annotations

import json
import subprocess
import sys

OLD = "bffdbe3"  # the last commit whose scans used the old sink definition
SCANS = [f"results/study/claims/{m}/scan.json" for m in ("gemma3-270m", "minilm-l6", "mpnet-base", "smollm2-135m")]
SCANS += [f"results/study/trained/{s}/scan.json" for s in ("m", "s", "xs")]
PLAIN = ("token", "offset", "previous_token", "duplicate_token", "induction", "token_std", "token_frac_above")


def _scores(doc: dict) -> dict[str, dict[str, float]]:
    return {h["name"]: h["scores"] for h in doc["heads"]}


def row(path: str) -> str:
    old = json.loads(subprocess.run(["git", "show", f"{OLD}:{path}"], check=True, capture_output=True).stdout)
    with open(path) as f:
        new = json.load(f)
    a, b = _scores(old), _scores(new)
    sink_a = [a[h]["sink"] for h in a]
    sink_b = [b[h]["sink"] for h in a]
    moved = max(abs(x - y) for x, y in zip(sink_a, sink_b))
    other = max(abs(a[h][k] - b[h][k]) for h in a for k in PLAIN if k in a[h])
    share = lambda v: f"{100 * sum(x >= 0.5 for x in v) / len(v):.1f}%"  # noqa: E731
    ids = lambda d: d["settings"]["detectors"]["sink"]["separator_ids"]  # noqa: E731
    return (f"| `{path.removeprefix('results/study/')}` | {ids(old)} → {ids(new)} | "
            f"{sum(sink_a) / len(sink_a):.3f} → {sum(sink_b) / len(sink_b):.3f} | {moved:.3f} | "
            f"{share(sink_a)} → {share(sink_b)} | {other:.0e} |")


def main() -> int:
    print("| scan | separator ids (old → new) | mean sink over heads | largest change of a head's sink | "
          "sink heads (≥ 0.5) | largest change of any other score |")
    print("|---|---|---|---|---|---|")
    for path in SCANS:
        print(row(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
