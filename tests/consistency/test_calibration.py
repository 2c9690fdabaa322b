"""The rule book's calibration (headlab.calibration): every rule has a planted effect and a null; the committed
table (results/rulebook/calibration/) is what the controls give at its seed, recomputed here for every control the
suite runs; and the table's marks follow from its numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from headlab.calibration import CalibrationResult, calibrate, reachable, registered
from headlab.rulebook import BOOK, Verdict

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "results" / "rulebook" / "calibration"
CONTROLS = registered()


def _committed() -> dict[str, dict]:
    return {r["rule"]: r for r in CalibrationResult.read(TABLE).rows}


def test_every_rule_has_a_control_and_a_committed_row():
    assert list(CONTROLS) and set(CONTROLS) == set(BOOK)
    assert set(_committed()) == set(BOOK)


@pytest.mark.parametrize("rule", [r for r, c in CONTROLS.items() if c.ci])
def test_a_control_gives_its_committed_row(rule):
    """Alone, at the committed seed and draws: the same power and false-positive rate (the controls are seeded)."""
    row = _committed()[rule]
    got = calibrate(CONTROLS[rule], 1, row["draws"], CalibrationResult.read(TABLE).seed)
    assert (got.power, got.false_positive) == pytest.approx((row["power"], row["false_positive"]))


def test_the_marks_follow_from_the_numbers():
    for row in _committed().values():
        ok = min(row["power"], row["family_power"]) >= 0.8 and \
            max(row["false_positive"], row["family_false_positive"]) <= 0.05
        assert row["calibrated"] == ok, row["rule"]
        if row["family"] > 1 and row["smallest_p"] is None:
            assert row["family_power"] == 0 and row["reachable"].startswith("no"), row["rule"]


def test_a_rule_without_a_p_cannot_reach_supported_in_a_family():
    from headlab.calibration import Calibration

    assert reachable(Calibration("x", 1, 10, 1.0, 0.0, None), 1).startswith("yes")
    assert reachable(Calibration("x", 29, 10, 1.0, 0.0, None), 29).startswith("no: it gives no p")
    assert reachable(Calibration("x", 29, 10, 1.0, 0.0, 0.05), 29).startswith("no: its smallest p 0.05")
    assert reachable(Calibration("x", 3, 10, 1.0, 0.0, 0.001), 3).startswith("yes")


@pytest.mark.parametrize("rule", ["slash.8", "formation.init", "retrieval.curriculum"])
def test_a_planted_draw_reads_supported_and_a_null_draw_does_not(rule):
    rng = np.random.default_rng(7)
    decide = BOOK[rule].decide
    c = CONTROLS[rule]
    assert sum(decide(c.planted(rng)).verdict == Verdict.SUPPORTED for _ in range(20)) >= 10
    assert sum(decide(c.null(rng)).verdict == Verdict.SUPPORTED for _ in range(20)) <= 2


def test_the_committed_table_calibrates_the_rules_as_they_are():
    """Every row was computed on the rule as it is now (its fingerprint), and every rule is calibrated at the
    evidence it declares, in its family: what `headlab verdicts --record` requires before it declares."""
    from headlab.calibration import declarable
    from headlab.rulebook import fingerprints

    assert declarable(CalibrationResult.read(TABLE), fingerprints()) == []


def test_recording_refuses_a_rule_that_cannot_reach_supported_or_was_calibrated_as_another(tmp_path):
    import dataclasses
    import shutil

    import headlab
    from headlab.calibration import TABLE_FOLDER, declarable
    from headlab.errors import HeadlabError
    from headlab.rulebook import fingerprints

    table = CalibrationResult.read(TABLE)
    rows = {r["rule"]: r for r in table.rows}
    fps = fingerprints()
    unreachable = {**rows["slash.1"], "reachable": "no: its smallest p 0.05 is not below 0.0017", "family": 29}
    stale = {**rows["slash.2"], "fingerprint": "000000000000"}
    weak = {**rows["slash.8"], "calibrated": False, "power": 0.78, "needs": "500 windows (power 0.86 alone)"}
    said = declarable(dataclasses.replace(table, rows=[unreachable, stale, weak]), fps)
    assert any(s.startswith("slash.1 cannot reach supported in its family of 29") for s in said)
    assert "slash.2's calibration is of another version of the rule (recalibrate it)" in said
    assert any(s.startswith("slash.8 is not calibrated at the evidence it declares (power 0.78 alone")
               and s.endswith("declare the evidence it needs, 500 windows (power 0.86 alone)") for s in said)
    assert "slash.3 has no calibration" in said and len(said) == len(fps)

    root = tmp_path / "a-copy"
    shutil.copytree(ROOT / "results" / "retrieval", root / "retrieval")
    dataclasses.replace(table, rows=[unreachable, *[r for r in table.rows if r["rule"] != "slash.1"]]).write(
        root / TABLE_FOLDER)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(HeadlabError, match="slash.1 cannot reach supported") as e:
        headlab.verdicts(root, record="a rule moved")
    assert "\n" not in str(e.value)
    assert before == {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_rule_not_calibrated_at_its_evidence_says_what_evidence_would_calibrate_it():
    """Every row that is not calibrated names the evidence that would be (or that none tried is), and the named
    size is one: its planted and null draws at that size calibrate the rule (alone, at the table's seed)."""
    from headlab.calibration import POWER, Control

    seed = CalibrationResult.read(TABLE).seed
    for rule, row in _committed().items():
        assert (row.get("needs") is None) == row["calibrated"], rule
        c = CONTROLS[rule]
        if row["calibrated"] or c.at is None or not row["needs"][0].isdigit():
            continue
        n = int(row["needs"].split()[0].replace(",", ""))
        assert n in c.grid, rule
        planted, null = c.at(n)
        sized = Control(rule, c.evidence, c.effect, c.nothing, planted, null, c.level, c.draws)
        got = calibrate(sized, 1, row["draws"], seed)
        assert got.power >= POWER and got.false_positive <= 0.05, rule
