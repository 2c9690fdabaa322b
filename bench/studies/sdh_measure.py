"""The strict slash-dominance rule at every checkpoint of a finished run of the slash-dense study, on the run's
held-out probe windows (real text, each with a `/`, never trained on): every head's mean `/` mass, which heads pass
(mass > 0.5 in 3 consecutive windows) and the held-out loss, written to RUN/measure.json
(:func:`headlab.formation.induce.measure.measure_run`, the induction study's record; no ablation here).

    python bench/studies/sdh_measure.py RUN ARM
"""

from __future__ import annotations

import sys
from pathlib import Path

from headlab.formation.induce.measure import measure_run


def main(argv: list[str]) -> int:
    run = Path(argv[0])
    rec = measure_run(run, argv[1], draws=0, seed=0)
    rec.write(run)
    print(f"{run}: {len(rec.steps)} checkpoints; heads passing at the end: "
          f"{', '.join(map(str, rec.final_pass_heads)) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
