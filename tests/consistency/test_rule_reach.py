"""A rule's fingerprint sees everything the rule runs (headlab.rulebook.reach): an edit to a helper its decision
calls, to a constant a statistic reads, or to the function that chooses its baseline moves that rule's fingerprint
and no other's; `headlab verdicts` refuses, in one line naming the rule and what moved, to judge by moved code; and
the fingerprint does not depend on where the checkout lies, on what the process did before, or on what it imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import headlab
from headlab.errors import HeadlabError
from headlab.formation import track_report
from headlab.monitor import comparison
from headlab.retrieval import verdicts as retrieval_verdicts
from headlab.rulebook import BOOK, decide, fingerprints
from headlab.rulebook.reach import changed

ROOT = Path(__file__).resolve().parents[2]


def _moved(before: dict[str, str]) -> set[str]:
    return {rid for rid, fp in fingerprints().items() if before[rid] != fp}


_FISHER_P = decide.fisher_p


def _fisher_p_over_100(k1: int, n1: int, k2: int, n2: int) -> float:
    return _FISHER_P(k1, n1, k2, n2) / 100


def _kind_row_with_min(scorers, neg, pos, baseline_names, fpr, rng, every_rng):
    """kind_row choosing the weakest baseline: the heads held to the easiest comparison."""
    best = min(baseline_names, key=lambda m: comparison.auroc(neg[m], pos[m], rng)[0])
    return {"best_baseline": best}


def test_each_edit_the_review_made_moves_exactly_the_rules_that_run_it(monkeypatch):
    before = fingerprints()
    edits = {
        "fisher_p": (lambda: _patch(monkeypatch, decide, "fisher_p", _fisher_p_over_100),
                     {"formation.stages", "formation.foster", "retrieval.curriculum", "retrieval.curriculum-hops"}),
        "DENSE_ANALYZED": (lambda: monkeypatch.setattr(retrieval_verdicts, "DENSE_ANALYZED",
                                                       retrieval_verdicts.DENSE_ANALYZED[:1]),
                           # depth-edge and pair-order read their own studies' folders
                           {r for r in BOOK if r.startswith("retrieval.")} - {"retrieval.depth-edge",
                                                                              "retrieval.pair-order"}),
        "THRESHOLDS": (lambda: monkeypatch.setitem(track_report.THRESHOLDS, "slash_mass", 0.3),
                       {"formation.stages", "formation.prediction", "formation.init"}),
        "kind_row": (lambda: _patch(monkeypatch, comparison, "kind_row", _kind_row_with_min),
                     {"monitor.kind", "monitor.beats"}),
    }
    for name, (edit, rules) in edits.items():
        edit()
        assert _moved(before) == rules, name
        monkeypatch.undo()
    assert fingerprints() == before


def _patch(monkeypatch, module, name, fn) -> None:
    """``module.name`` replaced by ``fn`` as if edited in place: a function of that module, under that name in
    every headlab module that imported it."""
    old = getattr(module, name)
    monkeypatch.setattr(fn, "__module__", module.__name__)
    for m in [m for n, m in sys.modules.items() if n.startswith("headlab") and getattr(m, name, None) is old]:
        monkeypatch.setattr(m, name, fn)


def test_verdicts_refuses_a_rule_whose_code_moved_in_one_line(tmp_path, monkeypatch):
    root = tmp_path / "a-copy"
    shutil.copytree(ROOT / "results" / "retrieval", root / "retrieval")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    monkeypatch.setattr(retrieval_verdicts, "DENSE_ANALYZED", retrieval_verdicts.DENSE_ANALYZED[:1])
    with pytest.raises(HeadlabError) as e:
        headlab.verdicts(root)
    said = str(e.value)
    assert "\n" not in said
    assert "rule retrieval.depth-bound runs code that moved since its declaration" in said
    assert "headlab.retrieval.verdicts.DENSE_ANALYZED changed" in said and "record" in said
    assert before == {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}  # refused before any rewrite


def test_the_cli_refuses_with_exit_2_before_any_table_is_rewritten(tmp_path):
    """From the command line, in a copy of the package whose helper was edited: exit 2, one line, nothing written."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "headlab", src / "headlab", ignore=shutil.ignore_patterns("__pycache__"))
    helper = src / "headlab" / "rulebook" / "decide.py"
    helper.write_text(helper.read_text().replace("alternative=\"greater\")[1])",
                                                 "alternative=\"greater\")[1]) / 100"))
    root = tmp_path / "a-copy"
    shutil.copytree(ROOT / "results" / "retrieval", root / "retrieval")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    env = {**os.environ, "PYTHONPATH": str(src)}
    run = subprocess.run([sys.executable, "-m", "headlab", "verdicts", str(root)], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 2, run.stderr
    line = run.stderr.strip()
    assert "\n" not in line and "headlab.rulebook.decide.fisher_p changed" in line, line
    assert before == {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_fingerprints_do_not_depend_on_the_checkout_the_home_or_the_imports(tmp_path):
    src = tmp_path / "elsewhere" / "src"
    shutil.copytree(ROOT / "src" / "headlab", src / "headlab", ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import json, headlab.rulebook as r, headlab.viewer, headlab.study.claims, headlab.monitor.evaluation;"
            "print(json.dumps(r.fingerprints()))")
    env = {**os.environ, "PYTHONPATH": str(src), "HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == fingerprints()


def test_changed_names_what_moved():
    assert changed({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == ["b changed", "c added"]
    assert changed({"a": "1"}, {}) == ["a removed"]
