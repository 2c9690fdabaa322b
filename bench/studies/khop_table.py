"""The k-hop runs of run.sh as one table: held-out error per hop count at each evaluation, and the hop counts
solved (every one up to k below 5% error) against Sanford et al.'s published threshold for the layer count."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from headlab.retrieval.khop import PUBLISHED, SOLVED_ERROR

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "results/retrieval/khop"


def finished(folder: Path) -> list[tuple[Path, dict, list[dict]]]:
    """Every run folder with a summary (a run still training has none and is left out)."""
    out = []
    for run in sorted(folder.glob("L*-k*-s*")):
        if (run / "summary.json").exists():
            rows = [json.loads(x) for x in (run / "eval.jsonl").read_text().splitlines()]
            out.append((run, json.loads((run / "summary.json").read_text()), rows))
    return out


def main() -> None:
    runs = finished(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
    hops = sorted(runs[0][2][0]["errors"], key=int)
    print("| run | layers | steps of 32 | " + " | ".join(f"error k={k}" for k in hops)
          + " | solved (k ≤), measured | theirs (k ≤), their curves read with our 5% cut |")
    print("|---|---|---|" + "---|" * len(hops) + "---|---|")
    for run, summary, rows in runs:
        errs = " | ".join(f"{rows[-1]['errors'][k]:.3f}" for k in hops)
        L = summary["n_layers"]
        print(f"| {run.name} | {L} | {summary['steps']:,} | {errs} | {summary['solved']} | {PUBLISHED.get(L, '—')} |")
    print(f"\nErrors at the last evaluation; solved: every hop count up to k below {SOLVED_ERROR} error. Theirs: "
          "Sanford et al.'s published error curves (100,000 steps of 32 at lr 1e-4, k up to 16) read with our cut, "
          f"{SOLVED_ERROR} error: not a number they state.\n")
    for run, summary, rows in runs:
        L = summary["n_layers"]
        print(f"### {run.name}: {L} layers, {summary['steps']} steps of {summary['batch_size']}, lr {summary['lr']}\n")
        print("| step | loss | " + " | ".join(f"error k={k}" for k in hops) + " | solved (k ≤) |")
        print("|---|---|" + "---|" * len(hops) + "---|")
        for r in rows:
            errs = " | ".join(f"{r['errors'][k]:.3f}" for k in hops)
            print(f"| {r['step']} | {r['loss']:.3f} | {errs} | {r['solved'] if r['solved'] >= 0 else 'none'} |")
        print(f"\nSolved at the end: hop counts 0..{summary['solved']} (error < {SOLVED_ERROR}); theirs for "
              f"{L} layers at 100,000 steps of 32, lr 1e-4, k up to 16, their published curves read with our "
              f"{SOLVED_ERROR} cut: 0..{PUBLISHED.get(L, '— (none published)')}.\n")


if __name__ == "__main__":
    main()
