"""Seal committed results written before results were sealed, their content unchanged, so that every reader checks
them from now on:

* every file under FOLDER (default results/) named as a result kind, and every JSON object a rule's data globs
  match (the induction study's per-arm records, the emergence tables), gets the sha256 of its content
  (headlab.io.sealed);
* every finished run's log (``eval.jsonl`` beside a ``summary.json``) gets its folder's manifest
  (headlab.integrity.Manifest), as a run finished now writes it.

Only a file committed and unchanged since (``git diff`` clean) is sealed: sealing records the committed content,
never an edit. A file that does not read as its kind is left as it is and named. Run from the repository's root;
prints how many files were sealed.

    python bench/studies/seal_results.py [FOLDER]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from headlab.catalog import complete
from headlab.errors import HeadlabError
from headlab.integrity import Manifest
from headlab.io import SEAL, sealed, write_json_atomic
from headlab.result import RESULTS, Result, read_json
from headlab.rulebook import BOOK


def committed(path: Path) -> bool:
    """Whether ``path`` is tracked by git and unchanged from the last commit."""
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", str(path)], capture_output=True).returncode == 0
    return tracked and subprocess.run(["git", "diff", "--quiet", "HEAD", "--", str(path)]).returncode == 0


def candidates(root: Path) -> dict[Path, type[Result] | None]:
    """Every JSON file to seal, with its result kind (``None``: data a rule reads that is not a result kind)."""
    out: dict[Path, type[Result] | None] = {p: None for r in BOOK.values() for g in r.data for p in root.glob(g)
                                    if p.suffix == ".json"}
    for kind, cls in RESULTS.items():
        out.update({p: cls for p in root.glob(f"**/{kind}")})
    return out


def seal_json(root: Path, left: list[str]) -> int:
    done = 0
    for path, cls in sorted(candidates(root).items(), key=lambda x: str(x[0])):
        doc = read_json(path)
        if not isinstance(doc, dict) or SEAL in doc:
            continue
        if not committed(path):
            left.append(f"{path} (not committed as it is)")
            continue
        try:
            if cls is not None:
                cls.from_json(dict(doc))
        except HeadlabError as exc:
            left.append(f"{path} ({exc})")
            continue
        write_json_atomic(path, sealed(doc))
        done += 1
    return done


def seal_logs(root: Path, left: list[str]) -> int:
    done = 0
    for log in sorted(root.glob("**/eval.jsonl")):
        if not (log.parent / "summary.json").is_file() or (log.parent / Manifest.KIND).exists():
            continue
        if not committed(log):
            left.append(f"{log} (not committed as it is)")
            continue
        Manifest.of(log.parent, [log.name]).write(log.parent)
        done += 1
    return done


def main(root: Path) -> None:
    complete()
    left: list[str] = []
    done = seal_json(root, left)
    logs = seal_logs(root, left)
    print(f"sealed {done} result file(s) and {logs} run log(s) under {root}")
    for x in left:
        print(f"left as it is: {x}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results"))
