"""The emergence table of results/formation/formation.md: the tracked runs under runs/formation-inits, by
initialization.

    python bench/studies/formation_inits_table.py > results/formation/formation.md
"""

from __future__ import annotations

from pathlib import Path

from headlab.formation.track_report import specialization_table


def main() -> None:
    out = Path("runs/formation-inits")
    arms = {init: sorted(out.glob(f"{init}-s*")) for init in ("default", "small-qk", "gpt2-scaled", "mimetic")}
    print(specialization_table(arms))


if __name__ == "__main__":
    main()
