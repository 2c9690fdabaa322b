"""Measure committed claims tables again from their committed parts (headlab.study.remeasure), after a rule's
statistic changed: each FOLDER's claims.json and claims.md are rewritten. Run from the repository's root (a table's
monitor folder is named from there).

    python bench/studies/claims_remeasure.py results/study/claims results/study/trained
"""

from __future__ import annotations

import sys

from headlab.study.remeasure import remeasure

for folder in sys.argv[1:]:
    remeasure(folder).write(folder)
    print(f"{folder}: measured again from its parts")
