"""Record, in every committed formation claims table that predates it, what produced its runs: each run's training
config (``FormationClaimsResult.produced``, read from the run's ``config.toml``), so that pre-registration follows the
runs' identity rather than the table's bytes. Nothing measured changes. Run once, from the repository's root.

    python bench/studies/formation_identities.py
"""

from __future__ import annotations

from pathlib import Path

from headlab.formation.claims import FormationClaimsResult, run_config


def main() -> None:
    for path in sorted(Path("results").glob(f"**/{FormationClaimsResult.KIND}")):
        table = FormationClaimsResult.read(path)
        if table.produced:
            continue
        table.produced = [run_config(r) for r in table.runs]
        table.write(path.parent)
        print(f"{path}: {sum(bool(c) for c in table.produced)} of {len(table.runs)} runs' configs recorded")


if __name__ == "__main__":
    main()
