"""The formation claims of the long study, judged by their declared rules on the finished runs given
(fewer than three: inconclusive), written to the folder above them as claims/ (formation_claims.json and .md).

    python bench/studies/formation_claims.py results/formation/long/s0 results/formation/long/s1 ...
"""

from __future__ import annotations

import sys
from pathlib import Path

from headlab.formation.claims import formation_claims


def main(runs: list[str]) -> int:
    if not runs:
        print("usage: formation_claims.py RUN [RUN ...] (tracked run folders)", file=sys.stderr)
        return 2
    result = formation_claims(runs)
    result.write(Path(runs[0]).parent / "claims")
    print(result.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
