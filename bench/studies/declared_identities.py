"""Give every declaration made before declarations recorded data identities the identities it would have recorded:
those of the results committed at the commit that declared it (the oldest commit since which ``declared.json`` has
held the rule's current fingerprint), read from git. Run once, from the repository's root; it rewrites
src/headlab/rulebook/declared.json and prints, per rule, the declaring commit and how many identities it holds.

    python bench/studies/declared_identities.py
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import headlab.monitor.comparison  # noqa: F401 - registers evaluate.json
import headlab.study.claims  # noqa: F401 - registers claims.json
from headlab.catalog import complete
from headlab.io import write_json_atomic
from headlab.result import RESULTS
from headlab.rulebook import registration

DECLARED = "src/headlab/rulebook/declared.json"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def declaring_commit(rule: str, fingerprint: str, history: list[str]) -> str:
    """The oldest commit of the unbroken run, newest first, whose declared.json holds ``fingerprint`` for ``rule``."""
    found = history[0]
    for commit in history:
        try:
            held = json.loads(git("show", f"{commit}:{DECLARED}")).get(rule, {}).get("fingerprint")
        except subprocess.CalledProcessError:
            break
        if held != fingerprint:
            break
        found = commit
    return found


def identities_at(commit: str) -> tuple[str, ...]:
    kinds = {k for k, cls in RESULTS.items() if hasattr(cls, "produced_from")}
    out: set[str] = set()
    for path in git("ls-tree", "-r", "--name-only", commit, "results").splitlines():
        if Path(path).name in kinds:
            out.update(registration.identities(Path(path).name, json.loads(git("show", f"{commit}:{path}"))))
    return tuple(sorted(out))


def main() -> None:
    complete()
    history = git("log", "--format=%H", "--", DECLARED).split()
    declared = registration.read(Path(DECLARED))
    memo: dict[str, tuple[str, ...]] = {}
    out = {}
    for rid, d in declared.items():
        commit = declaring_commit(rid, d.fingerprint, history)
        if commit not in memo:
            memo[commit] = identities_at(commit)
        out[rid] = registration.Declaration(d.version, d.fingerprint, d.files, d.stats, d.code, d.parts,
                                            memo[commit])
        print(f"{rid}: declared at {commit[:7]}, {len(memo[commit])} identities")
    write_json_atomic(DECLARED, {rid: d.to_json() for rid, d in out.items()})


if __name__ == "__main__":
    main()
