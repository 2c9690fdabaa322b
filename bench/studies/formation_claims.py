"""The formation claims of the long study, judged by their declared rules on the finished runs given
(fewer than three: inconclusive), written beside them: claims/ for the document's metric (`/` mass), claims-METRIC/
for another (--metric sink: early prediction of the heads that do specialize in these runs).

    python bench/studies/formation_claims.py [--metric slash_mass] results/formation/long/s0 results/formation/long/s1
        [--other-init results/formation/long/small-qk/s0 ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from headlab.formation.claims import formation_claims, specialized_counts


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="tracked run folders (seeds of one config)")
    ap.add_argument("--metric", default="slash_mass", help="the score whose specialized heads are predicted")
    ap.add_argument("--other-init", nargs="*", default=[], metavar="RUN",
                    help="tracked runs of the same config under another initialization: the initialization claim "
                         "compares their specialized heads per run with the RUNS' (without them: not measured)")
    a = ap.parse_args(argv)
    arms = (specialized_counts(a.runs, a.metric), specialized_counts(a.other_init, a.metric)) if a.other_init else None
    result = formation_claims(a.runs, metric=a.metric, init_arms=arms)
    result.write(Path(a.runs[0]).parent / ("claims" if a.metric == "slash_mass" else f"claims-{a.metric}"))
    print(result.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
