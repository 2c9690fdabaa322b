"""Claim 9 of the committed claims table re-read from the committed monitor evaluations, with the rule the
claims command uses (``headlab.study.claims.reread_monitor``); the other claims are the committed ones.

    python results/study/claim9.py        # rewrites results/study/claims/claims.json and claims.md
"""

from pathlib import Path

from headlab.result import read_json
from headlab.study.claims import ClaimsResult, reread_monitor

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "results/study"

if __name__ == "__main__":
    table = ClaimsResult.decode(read_json(HERE / "claims" / "claims.json"))
    reread_monitor(table, HERE.parent / "monitor").write(HERE / "claims")
    print(f"wrote {HERE / 'claims'}/claims.json and claims.md")
