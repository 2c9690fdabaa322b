"""The order in which head roles emerge, across runs (seeds): one table for the retrieval circuit's labelled
heads and for the formation study's specialized heads.

A run is a sequence of *events* ``(role, step)`` in the order its heads emerged (the step from which a head's
score stays at or above its threshold, :func:`headlab.formation.phases.emergence_step`). A role names what a
head does and where, not which head it is (head indices are arbitrary across seeds): ``L1:query→def-ref`` for a
retrieval head, ``L1:induction`` for a formation head. A role's first event counts; later heads of the same role
do not move it. The table gives each run's order, the most common order and how many runs share it, and, for
every two roles seen together in at least two runs, how often each came first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from headlab.formation.track_report import THRESHOLDS, read_phases
from headlab.head import Head
from headlab.result import Result

Event = tuple[str, int]


@dataclass
class EmergenceResult(Result):
    """``emergence.json``: each run's order of emerging head roles, how often it repeats, pairwise precedence;
    ``by_layer_and_key`` is the same table with coarser roles (for retrieval: the reader dropped), None inside."""

    KIND = "emergence.json"
    runs: list[dict[str, Any]]
    most_common_order: list[str]
    same_order: int
    n_runs: int
    pairwise: list[dict[str, Any]]
    by_layer_and_key: "EmergenceResult | None" = None

    def markdown(self) -> str:
        lines = []
        for title, tab in (("by role", self), ("by coarser role", self.by_layer_and_key)):
            if tab is None:
                continue
            lines += [f"{title}:"] + [f"  {o['run']}: " + (" → ".join(o["order"]) or "nothing emerged")
                                      for o in tab.runs]
            lines.append(f"  the most common order ({' → '.join(tab.most_common_order) or 'none'}) in "
                         f"{tab.same_order} of {tab.n_runs} runs")
            lines += [f"  {p['a']} before {p['b']} in {p['a_first']} of {p['runs']} runs, after in {p['b_first']}, "
                      f"same checkpoint in {p['same_step']}" for p in tab.pairwise]
        return "\n".join(lines) + "\n"


def emergence_table(runs: Sequence[tuple[str, Iterable[Event]]],
                    coarse: Callable[[str], str] | None = None) -> EmergenceResult:
    """The emergence table of ``runs`` (name, events in emergence order); ``coarse`` maps a role to a coarser
    one for the nested ``by_layer_and_key`` table."""
    runs = [(name, list(events)) for name, events in runs]
    orders = []
    for name, events in runs:
        seq: list[Event] = []
        for role, step in events:
            if role not in [r for r, _ in seq]:
                seq.append((role, step))
        orders.append({"run": name, "order": [f"{r}@{s}" for r, s in seq], "types": [r for r, _ in seq]})
    types = [tuple(o["types"]) for o in orders]
    most = max(types, key=types.count) if types else ()  # ties: the order of the first run that has it
    nested = None if coarse is None else emergence_table([(n, [(coarse(r), s) for r, s in ev]) for n, ev in runs])
    return EmergenceResult(runs=orders, most_common_order=list(most), same_order=types.count(most) if types else 0,
                           n_runs=len(orders), pairwise=pairwise_order(orders), by_layer_and_key=nested)


def pairwise_order(orders: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For every two roles that both emerged in at least two runs: in how many runs A came first, B came
    first, or both at the same checkpoint. Robust to runs that grew different sets of roles."""
    steps = [{o.rsplit("@", 1)[0]: int(o.rsplit("@", 1)[1]) for o in run["order"]} for run in orders]
    names = sorted({t for s in steps for t in s})
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = [s for s in steps if a in s and b in s]
            if len(both) >= 2:
                out.append({"a": a, "b": b, "runs": len(both), "a_first": sum(s[a] < s[b] for s in both),
                            "b_first": sum(s[b] < s[a] for s in both), "same_step": sum(s[a] == s[b] for s in both)})
    return out


def tracked_events(run: str | Path, metrics: Sequence[str] = ("previous-token", "induction", "sink", "slash_mass")
                   ) -> list[Event]:
    """A tracked run's events: ``L<layer>:<metric>`` at each head's emergence step (its score crosses the
    metric's :data:`~headlab.formation.track_report.THRESHOLDS` and stays above), in step order."""
    scores = read_phases(Path(run)).scores
    found = [(v["emerged_at"], f"L{Head.parse(h).layer}:{m}") for m in metrics if m in THRESHOLDS
             for h, v in scores.get(m, {}).items() if v["emerged_at"] is not None]
    return [(role, int(step)) for step, role in sorted(found, key=lambda x: x[0])]
