"""What "an SDH formed" means in a training run, declared once: a head passes the strict rule
(:data:`headlab.census.stats.SDH`: `/` mass above its threshold in its number of consecutive held-out probe windows,
in their fixed order) at a checkpoint. Two readings, always reported together, since a head can pass at one
checkpoint and never again: **transient** (it passes at some checkpoint) and **stable** (it passes at the final
checkpoint). The induction study's record (``measure.json``), the formation claims' "untestable here" gate, the
slash-dense study's answer and the docs read this definition; a run without a strict-rule record has none, and
what is read in its place (the tracker's mean `/` mass) says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from headlab.census.stats import SDH
from headlab.head import Head

DEFINITION = (f"a head passes the strict rule (`/` mass > {SDH.threshold} in {SDH.consecutive} consecutive probe "
              "windows) at a checkpoint: transient at some checkpoint, stable at the final one")


@dataclass(frozen=True)
class Formed:
    """A run's SDHs by the strict rule: every head that passes with the checkpoint steps at which it does, and the
    heads that pass at the final checkpoint, of ``checkpoints`` checkpoints in all."""

    passing: dict[str, list[int]]
    final: list[str]
    checkpoints: int

    @property
    def transient(self) -> bool:
        return bool(self.passing)

    @property
    def stable(self) -> bool:
        return bool(self.final)

    @property
    def first_step(self) -> int | None:
        return min((s for steps in self.passing.values() for s in steps), default=None)

    def said(self) -> str:
        """Each passing head and where: ``2.0 at step 574 only (1 of 48 checkpoints)``."""
        if not self.passing:
            return "none"
        parts = []
        for head, steps in self.passing.items():
            where = f"step {steps[0]:,} only" if len(steps) == 1 else f"{len(steps)} checkpoints from step {steps[0]:,}"
            end = ", and at the end" if head in self.final and len(steps) > 1 else ""
            parts.append(f"{head} at {where} ({len(steps)} of {self.checkpoints} checkpoints{end})")
        return "; ".join(parts)


def formed(steps: Sequence[int], passed: Sequence[Any]) -> Formed:
    """The definition applied to a run's strict rule at each checkpoint (``passed``: per checkpoint, (L, H) bool)."""
    at = np.asarray(passed, dtype=bool)  # (S, L, H)
    passing = {str(Head(int(l), int(h))): [int(steps[int(i)]) for i in np.nonzero(at[:, l, h])[0]]
               for l, h in zip(*np.nonzero(at.any(axis=0)))}
    final = [str(Head(int(l), int(h))) for l, h in zip(*np.nonzero(at[-1]))] if len(at) else []
    return Formed(passing, final, len(steps))


__all__ = ["DEFINITION", "Formed", "formed"]
