"""The per-arm table of results/induction/formation.md: per metric, heads over the tracker's threshold per seed,
their median emergence step and the median top final score, from each tracked run under runs/induction/runs.

    python bench/studies/induction_formation_table.py > results/induction/formation.md
"""

from __future__ import annotations

import statistics
from pathlib import Path

from headlab.formation.track_report import THRESHOLDS, read_phases


def main() -> None:
    METRICS = ("previous-token", "induction", "sink", "slash_mass")
    arms = ["plain", "init-small-qk", "init-gpt2-scaled", "init-mimetic"]
    print("| arm | " + " | ".join(f"{m}: heads ≥ {THRESHOLDS[m]} per seed; median emergence step; top final score "
                                "(median over seeds)" for m in METRICS) + " |")
    print("|---|" + "---|" * len(METRICS))
    for arm in arms:
        cells = []
        for m in METRICS:
            counts, steps, top = [], [], []
            for run in sorted(Path("runs/induction/runs").glob(f"{arm}-s*")):
                heads = read_phases(run).scores[m]
                em = [v["emerged_at"] for v in heads.values() if v["emerged_at"] is not None]
                counts.append(len(em))
                steps += em
                top.append(max(v["final"] for v in heads.values()))
            cells.append(f"{', '.join(map(str, counts))}; " + (f"{statistics.median(steps):.0f}" if steps else "-")
                         + f"; {statistics.median(top):.2f}")
        print(f"| {arm} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
