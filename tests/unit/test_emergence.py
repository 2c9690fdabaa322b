"""One emergence table for the retrieval circuit and the formation runs: roles from a tracked run's phases,
first events only, a deterministic most common order, pairwise precedence."""

from __future__ import annotations

import json
from pathlib import Path

from headlab.formation.emergence import EmergenceResult, emergence_table, tracked_events


def _tracked(folder: Path, emerged: dict[str, dict[str, int | None]]) -> Path:
    (folder / "track").mkdir(parents=True)
    scores = {m: {h: {"emerged_at": s} for h, s in heads.items()} for m, heads in emerged.items()}
    (folder / "track" / "phases.json").write_text(json.dumps({"scores": scores}))
    return folder


def test_a_tracked_run_gives_its_roles_in_step_order(tmp_path: Path) -> None:
    run = _tracked(tmp_path / "s0", {"induction": {"1.2": 900, "1.0": None}, "previous-token": {"0.3": 300},
                                     "sink": {"0.0": 900, "2.1": 50}, "entropy": {"0.1": 10}})
    # entropy has no specialization threshold: not a role
    assert tracked_events(run) == [("L2:sink", 50), ("L0:previous-token", 300), ("L1:induction", 900),
                                   ("L0:sink", 900)]


def test_the_table_counts_first_events_and_breaks_ties_by_run_order(tmp_path: Path) -> None:
    runs = [("a", [("L0:x", 10), ("L1:y", 20), ("L0:x", 30)]),  # a second L0:x head does not move the role
            ("b", [("L1:y", 5), ("L0:x", 5)]),
            ("c", [("L0:x", 1), ("L1:y", 2)])]
    t = emergence_table(runs, coarse=lambda role: role.split(":")[1])
    assert t.runs[0]["order"] == ["L0:x@10", "L1:y@20"] and t.most_common_order == ["L0:x", "L1:y"]
    assert t.same_order == 2 and t.n_runs == 3
    assert t.pairwise == [{"a": "L0:x", "b": "L1:y", "runs": 3, "a_first": 2, "b_first": 0, "same_step": 1}]
    assert t.by_layer_and_key is not None and t.by_layer_and_key.most_common_order == ["x", "y"]
    once = emergence_table([("p", [("B", 1), ("A", 2)]), ("q", [("A", 1), ("B", 2)])])
    assert once.most_common_order == ["B", "A"] and once.same_order == 1  # a tie: the first run's order
    assert "L0:x before L1:y in 2 of 3 runs" in t.markdown()
    assert EmergenceResult.from_json(json.loads(json.dumps(t.to_json()))) == t
