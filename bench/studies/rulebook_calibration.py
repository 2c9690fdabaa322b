"""The rule book's calibration table: every rule's power on its planted effect and false-positive rate on its null
(headlab.calibration), alone and in the family its committed verdicts are corrected in (the largest family its rows
form in a committed table, by the family the rule declares), and whether it could reach supported where a whole
table was one family. Written to results/rulebook/calibration/ with
the command and its wall time.

    python bench/studies/rulebook_calibration.py [--draws N] [--seed 0] [--overwrite] [--only RULE ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from headlab.calibration import TABLE_FOLDER, CalibrationResult, calibration_row, registered
from headlab.errors import HeadlabError
from headlab.io import write_text_atomic
from headlab.reporting.verdicts import REJUDGED
from headlab.retrieval.verdicts import RetrievalVerdictsResult
from headlab.rulebook import BOOK
from headlab.rulebook.book import Family
from headlab.rulebook.multiplicity import family, family_of

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "results" / TABLE_FOLDER
JUDGED = (*REJUDGED, RetrievalVerdictsResult)


def committed_families(results: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Per rule, over the committed tables that hold its verdicts: the largest family its own rows form under the
    family it declares (1 where it corrects nothing), and the largest whole table (every verdict of a table one
    family, as rule books before version 12 corrected them)."""
    own, table = dict.fromkeys(BOOK, 1), dict.fromkeys(BOOK, 1)
    for kind in JUDGED:
        for path in sorted(results.glob(f"**/{kind.KIND}")):
            rows = [{"rule": rule, "verdict": label.split(" · ")[-1].split(" (")[0]}  # the outcome of a label
                    for rule, label, _ in kind.read(path).verdicts().values()]
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
    ap.add_argument("--only", nargs="+", default=None, metavar="RULE",
                    help="recompute these rules' rows and keep the committed table's others (its seed and draws)")
    a = ap.parse_args(argv)
    if (OUT / CalibrationResult.KIND).exists() and not a.overwrite:
        raise HeadlabError(f"{OUT} already holds {CalibrationResult.KIND}; pass --overwrite to replace it")
    kept = {}
    if a.only:
        if unknown := [r for r in a.only if r not in BOOK]:
            raise HeadlabError(f"--only {unknown[0]}: no such rule; the rules are {', '.join(BOOK)}")
        old = CalibrationResult.read(OUT)
        if old.seed != a.seed:
            raise HeadlabError(f"--only with --seed {a.seed}: the committed table's seed is {old.seed}; give it")
        kept = {r["rule"]: r for r in old.rows if r["rule"] not in a.only}
    t0 = time.time()
    families, tables = committed_families(ROOT / "results")
    rows = list(kept.values())
    for rid, c in registered().items():
        if rid in kept:
            continue
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
    said = (OUT / "run.txt").read_text() if a.only and (OUT / "run.txt").exists() else ""
    write_text_atomic(OUT / "run.txt", said + f"command: {command}\nwall time: {time.time() - t0:.0f} s\n")
    print(result.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
