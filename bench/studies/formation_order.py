"""The order in which specialized heads emerge across the seeds of a tracked formation study (the retrieval
circuit's emergence table, on the formation runs' roles ``L<layer>:<metric>``), written to OUT/emergence.json
and OUT/emergence.md.

    cd results/formation/long && python ../../../bench/studies/formation_order.py order s0 s1 s2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from headlab.formation.emergence import emergence_table, tracked_events
from headlab.io import write_text_atomic


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="folder for emergence.json and emergence.md")
    ap.add_argument("runs", nargs="+", help="tracked run folders (one per seed)")
    a = ap.parse_args(argv)
    table = emergence_table([(Path(r).name, tracked_events(r)) for r in a.runs],
                            coarse=lambda role: role.split(":", 1)[1])  # the metric alone, any layer
    out = table.write(Path(a.out))
    write_text_atomic(out / "emergence.md", f"# Order of emergence ({', '.join(a.runs)})\n\n```\n"
                      f"{table.markdown()}```\n")
    print(table.markdown(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
