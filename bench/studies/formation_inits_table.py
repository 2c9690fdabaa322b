"""The emergence table by initialization: per arm and metric, the heads that emerged and rose per seed, their
median step and layers, and each seed's top final score (``specialization_table``).

    python bench/studies/formation_inits_table.py > results/formation/formation.md
    python bench/studies/formation_inits_table.py default=results/formation/long/s0,results/formation/long/s1 \\
        small-qk=results/formation/long/small-qk/s0 > results/formation/long/arms.md

Without arguments: the tracked runs under runs/formation-inits (the short study), by initialization. With
``ARM=RUN,RUN,...`` arguments: those tracked runs (folders holding track/phases.json), by arm, in that order.
"""

from __future__ import annotations

import sys
from pathlib import Path

from headlab.formation.track_report import specialization_table


def main(argv: list[str]) -> int:
    if not argv:
        out = Path("runs/formation-inits")
        arms = {init: sorted(out.glob(f"{init}-s*")) for init in ("default", "small-qk", "gpt2-scaled", "mimetic")}
    else:
        bad = [a for a in argv if "=" not in a]
        if bad:
            print(f"{bad[0]!r}: give ARM=RUN,RUN,...", file=sys.stderr)
            return 2
        arms = {name: [Path(r) for r in runs.split(",") if r] for name, runs in (a.split("=", 1) for a in argv)}
    print(specialization_table(arms))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
