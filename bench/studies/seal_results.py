"""Seal committed results written before results were sealed: every file under FOLDER (default results/) named as a
result kind gets the sha256 of its content (headlab.io.sealed), its content unchanged, so that every reader checks
it from now on. A file that does not read as its kind is left as it is and named. Run once, from the repository's
root; prints how many files were sealed.

    python bench/studies/seal_results.py [FOLDER]
"""

from __future__ import annotations

import sys
from pathlib import Path

from headlab.catalog import complete
from headlab.errors import HeadlabError
from headlab.io import SEAL, sealed, write_json_atomic
from headlab.result import RESULTS, read_json


def main(root: Path) -> None:
    complete()
    done, left = 0, []
    for kind, cls in RESULTS.items():
        for path in sorted(root.glob(f"**/{kind}")):
            doc = read_json(path)
            if not isinstance(doc, dict) or SEAL in doc:
                continue
            try:
                cls.from_json(dict(doc))
            except HeadlabError as exc:
                left.append(f"{path} ({exc})")
                continue
            write_json_atomic(path, sealed(doc))
            done += 1
    print(f"sealed {done} result file(s) under {root}")
    for x in left:
        print(f"left as it is: {x}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results"))
