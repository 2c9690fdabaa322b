"""A retrieval or k-hop run is read through its two registered results, task.json and summary.json: every
committed run reads strictly, round-trips, and keeps what its file says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headlab.errors import HeadlabError
from headlab.io import unsealed
from headlab.result import RESULTS, found_in
from headlab.retrieval.record import RunSummary, RunTask, finished_runs
from headlab.retrieval.task import KHopTask, RetrievalTask

ROOT = Path(__file__).resolve().parents[2]
SUMMARIES = sorted((ROOT / "results").rglob("summary.json"))
TASKS = sorted((ROOT / "results").rglob("task.json"))


def test_both_files_are_registered_kinds() -> None:
    assert RESULTS["task.json"] is RunTask and RESULTS["summary.json"] is RunSummary
    assert len(SUMMARIES) > 100 and len(TASKS) > 10


def test_every_committed_summary_reads_and_keeps_its_values() -> None:
    kinds = set()
    for path in SUMMARIES:
        s = RunSummary.read(path)
        raw = unsealed(json.loads(path.read_text()), path)
        kinds.add(s.task.get("task", "retrieval"))
        assert RunSummary.from_json(s.to_json()) == s, path
        assert {k: v for k, v in raw.items() if v not in (None, {})}.items() <= s.to_json().items(), path
        assert all(s[k] == raw.get(k, s[k]) for k in raw), path  # null and {} read back as written
    assert kinds == {"retrieval", "khop"}


def test_every_committed_task_reads_as_its_kind() -> None:
    for path in TASKS:
        raw = unsealed(json.loads(path.read_text()), path)
        task = RunTask.read(path).task
        assert isinstance(task, KHopTask if raw.get("task") == "khop" else RetrievalTask), path
        assert raw.items() <= task.to_json().items(), path


def test_a_folder_is_known_by_its_task_and_a_bad_one_is_named(tmp_path: Path) -> None:
    RunTask(KHopTask(max_hops=3)).write(tmp_path / "k")
    RunTask(RetrievalTask(2, "dense")).write(tmp_path / "r")
    assert found_in(tmp_path / "k") == [RunTask] and RunTask.read(tmp_path / "k").task == KHopTask(max_hops=3)
    assert RunTask.read(tmp_path / "r").task == RetrievalTask(2, "dense")
    assert finished_runs(tmp_path) == []  # a run without its summary is not finished
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "task.json").write_text(json.dumps({"depth": 2, "curriculum": "sideways"}))
    with pytest.raises(HeadlabError, match=r"bad/task.json.*unknown curriculum 'sideways'"):
        RunTask.read(tmp_path / "bad")
    (tmp_path / "bad" / "task.json").write_text(json.dumps({"depth": 2, "colour": "red"}))
    with pytest.raises(HeadlabError, match="unknown colour"):
        RunTask.read(tmp_path / "bad")
