"""The rule book's calibration table: every rule's power on its planted effect and false-positive rate on its null
(headlab.calibration), alone and in the family its committed verdicts are corrected in (the largest family its rows
form in a committed table, by the family the rule declares; the monitor's evaluation tables correct nothing), and
whether it could reach supported where a whole table was one family. Written to results/rulebook/calibration/ with
the command and its wall time.

    python bench/studies/rulebook_calibration.py [--draws N] [--seed 0] [--overwrite]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from headlab.calibration import CalibrationResult, calibration_row, registered
from headlab.errors import HeadlabError
from headlab.io import write_text_atomic
from headlab.reporting.verdicts import REJUDGED, verdict_rows
from headlab.result import read_json
from headlab.retrieval.verdicts import RetrievalVerdictsResult
from headlab.rulebook import BOOK
from headlab.rulebook.book import Family
from headlab.rulebook.multiplicity import family, family_of

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "results" / "rulebook" / "calibration"
CORRECTED = tuple(k for k in REJUDGED if k.KIND != "evaluate.json") + (RetrievalVerdictsResult,)


def committed_families(results: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Per rule, over the committed tables that hold its verdicts: the largest family its own rows form under the
    family it declares (1 where it corrects nothing), and the largest whole table (every verdict of a table one
    family, as rule books before version 12 corrected them)."""
    own, table = dict.fromkeys(BOOK, 1), dict.fromkeys(BOOK, 1)
    for kind in CORRECTED:
        for path in sorted(results.glob(f"**/{kind.KIND}")):
            rows: list[dict] = []
            verdict_rows(read_json(path), rows)
            m = family(rows)
            for rule in {r["rule"] for r in rows}:
                table[rule] = max(table[rule], m)
                if family_of(rule) == Family.ROWS:
                    own[rule] = max(own[rule], family([r for r in rows if r["rule"] == rule]))
    return own, table


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=None, help="draws per rule (default: each control's own)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--overwrite", action="store_true", help="replace the committed table")
    a = ap.parse_args(argv)
    if (OUT / CalibrationResult.KIND).exists() and not a.overwrite:
        raise HeadlabError(f"{OUT} already holds {CalibrationResult.KIND}; pass --overwrite to replace it")
    t0 = time.time()
    families, tables = committed_families(ROOT / "results")
    rows = []
    for rid, c in registered().items():
        t = time.time()
        rows.append(calibration_row(c, families[rid], a.seed, a.draws, tables[rid]))
        r = rows[-1]
        print(f"{rid}: power {r['power']:.2f}, false positives {r['false_positive']:.3f}, family {r['family']}: "
              f"power {r['family_power']:.2f} ({time.time() - t:.0f} s)", file=sys.stderr, flush=True)
    order = list(BOOK)
    rows.sort(key=lambda r: order.index(r["rule"]))
    result = CalibrationResult(a.seed, rows)
    result.write(OUT)
    command = "python bench/studies/rulebook_calibration.py" + "".join(f" {x}" for x in argv)
    write_text_atomic(OUT / "run.txt", f"command: {command}\nwall time: {time.time() - t0:.0f} s\n")
    print(result.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
