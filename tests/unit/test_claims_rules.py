import math

import pytest

from headlab.census.stats import wilson
from headlab.study.claim_rules import CLAIMS, verdict_bound, verdict_range


@pytest.mark.parametrize("iv,expected", [
    ((0.17, 0.12, 0.22), "supported"),
    ((0.02, 0.01, 0.05), "not supported"),
    ((0.10, 0.05, 0.16), "inconclusive"),
    ((0.30, 0.25, 0.40), "not supported"),
    ((math.nan, 0, 1), "inconclusive"),
])
def test_range_rule(iv, expected):
    assert verdict_range(iv, 0.15, 0.20) == expected


def test_bound_rule_both_directions():
    assert verdict_bound((0.9, 0.85, 0.95), 0.8, at_least=True) == "supported"
    assert verdict_bound((0.5, 0.4, 0.7), 0.8, at_least=True) == "not supported"
    assert verdict_bound((0.8, 0.7, 0.9), 0.8, at_least=True) == "inconclusive"
    assert verdict_bound((0.1, 0.05, 0.2), 0.25, at_least=False) == "supported"
    assert verdict_bound((0.4, 0.3, 0.5), 0.25, at_least=False) == "not supported"


def test_wilson_interval():
    p, lo, hi = wilson(0, 72)
    assert p == 0 and lo == 0 and 0.04 < hi < 0.06
    p, lo, hi = wilson(36, 72)
    assert p == 0.5 and lo < 0.5 < hi
    assert all(math.isnan(x) for x in wilson(0, 0))
    for k, n in [(3, 17), (12, 144), (1, 2)]:  # against the closed form of the Wilson score interval
        z, p = 1.959963984540054, k / n
        mid, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (
            1 + z * z / n)
        assert wilson(k, n)[1:] == pytest.approx((mid - half, mid + half), abs=1e-9)


def test_claim_numbers_live_only_in_the_claim_definitions():
    """The write-up's numbers are the claims under test; the rules read them from CLAIMS."""
    assert CLAIMS[1].bounds == (0.15, 0.20) and CLAIMS[2].bounds == (5.0, 8.0)
    import inspect

    import headlab.study.claims as mod

    body = inspect.getsource(mod.measure) + inspect.getsource(mod.cross_model)
    for number in ("0.15", "0.2", "5.0", "8.0", "15", "20"):
        assert number not in body


def test_claim_8_reads_the_signed_accuracy_change_and_its_interval():
    import inspect

    import headlab.study.claims as mod
    from headlab.study.claims import ablation_row

    assert CLAIMS[7].bounds == (-3.0, -2.0)  # "costs 2-3 points": the signed change lies in [-3, -2]
    assert "2.0" not in inspect.getsource(ablation_row) and "3.0" not in inspect.getsource(ablation_row)
    rec = {"heads": ["0.7"], "slash": {"accuracy": {"delta_points": -2.5, "interval_points": [-3.9, -1.2],
                                                    "control_delta_mean": -0.004}},
           "no_slash": {"accuracy": {"delta_points": -1.0}},
           "control": {"draws": 5, "difference": 0.3, "p_value": 0.17}}
    row = ablation_row(rec, sdhs=True, causal=True)
    assert row["interval"] == (-2.5, -3.9, -1.2) and row["verdict"] == "supported"
    assert "accuracy after `/` fell 2.50 points" in row["detail"] and "without `/` fell 1.00 points" in row["detail"]
    rec["slash"]["accuracy"].update(delta_points=0.32, interval_points=[-6.4, 6.6])
    rose = ablation_row(rec, sdhs=True, causal=True)
    assert rose["interval"] == (0.32, -6.4, 6.6) and "rose 0.32 points" in rose["detail"]
    assert rose["verdict"] == "inconclusive"
    rec["slash"]["accuracy"].update(delta_points=-7.6, interval_points=[-9.0, -6.0])
    assert ablation_row(rec, sdhs=True, causal=True)["verdict"] == "not supported"
    no_sdh = ablation_row(rec, sdhs=False, causal=True)
    assert no_sdh["verdict"] == "inconclusive" and no_sdh["reason"] == "no SDH"
    assert ablation_row(rec, sdhs=True, causal=False)["verdict"] == "n/a"
    not_measured = ablation_row(None, sdhs=True, causal=True)
    assert not_measured["verdict"] == "n/a" and not_measured["reason"] == "not measured"
    assert mod.CLAIMS[-2].id == 8


def test_claim_9_reads_the_monitor_evaluation_per_kind():
    from headlab.study.claims import monitor_row

    def ev(*verdicts):
        return {"kinds": {f"k{i}": {"verdict": v} for i, v in enumerate(verdicts)}, "baselines": ["characters"],
                "fresh_documents": 500}

    row = monitor_row(ev("heads better", "tie"))
    assert row["verdict"] == "supported" and row["value"] == "1 of 2 kinds" and "heads better: k0" in row["detail"]
    assert monitor_row(ev("tie", "baseline better"))["verdict"] == "not supported"
    mixed = monitor_row(ev("heads better", "baseline better"))
    assert mixed["verdict"] == "inconclusive" and mixed["reason"] == "mixed"
    assert monitor_row(None)["reason"] == "not measured"


def test_claim_8_ablates_at_most_half_of_a_layer_by_slash_mass():
    import numpy as np

    from headlab.ablation.experiment import matched_control
    from headlab.study.claims_parts import ablation_heads

    mass = np.array([[0.9, 0.1, 0.8, 0.7], [0.2, 0.3, 0.0, 0.6]])
    kept, dropped = ablation_heads(["0.0", "0.2", "0.3", "1.3", "1.1"], mass, n_heads=4)
    assert kept == ["0.0", "0.2", "1.1", "1.3"] and dropped == ["0.3"]  # 0.3 has the least mass of layer 0
    import random

    by_layer: dict[int, list[int]] = {}
    for h in kept:
        layer, head = map(int, h.split("."))
        by_layer.setdefault(layer, []).append(head)
    matched_control(by_layer, 4, random.Random(0))  # no error: every layer has a control
    assert ablation_heads(["0.0", "0.1"], mass, n_heads=3) == (["0.0"], ["0.1"])  # 3 heads: at most 1


def test_every_model_gets_its_own_result_folder():
    from headlab.study.claims import folder_names

    assert folder_names(["minilm-l6", "a/mm", "b/mm/"]) == ["minilm-l6", "a-mm", "b-mm"]
    assert folder_names(["x/mm", "x/mm"]) == ["x-mm-0", "x-mm-1"]
    assert folder_names(["runs/xs", "runs/s"]) == ["xs", "s"]


def test_a_saved_part_of_another_model_is_not_reused(tmp_path):
    from pathlib import Path

    from headlab.census.result import ScanResult
    from headlab.study.claims_parts import saved_scan

    sc = ScanResult.read(Path(__file__).parents[2] / "results/quickstart/scan")
    sc.write(tmp_path)
    st = sc.settings
    assert saved_scan(tmp_path, "minilm-l6", st["corpus"], st["max_samples"], st["seed"], st["filter"]) is not None
    assert saved_scan(tmp_path, "b/minilm-l6", st["corpus"], st["max_samples"], st["seed"], st["filter"]) is None
    # nor one measured in another dtype (a file from before the dtype was recorded counts as float32)
    assert saved_scan(tmp_path, "minilm-l6", st["corpus"], st["max_samples"], st["seed"], st["filter"],
                      "bfloat16") is None


def test_claim_9_is_reread_from_a_monitor_evaluation_without_remeasuring(tmp_path, capsys) -> None:
    """The committed claims table with claim 9 read again by the claims command's own rule; a model with no
    evaluation stays not measured and is named on stderr; every other claim is kept."""
    import json
    from pathlib import Path

    from headlab.result import read_json
    from headlab.study.claims import ClaimsResult, monitor_row, reread_monitor

    committed = Path(__file__).parents[2] / "results" / "study" / "claims" / "claims.json"
    table = ClaimsResult.decode(read_json(committed))
    before = {m.model: dict(m.rows) for m in table.models}
    evaluation = {"kinds": {"paths": {"verdict": "heads better"}, "code": {"verdict": "baseline better"}},
                  "baselines": ["characters", "ngram"], "fresh_documents": 9}
    (tmp_path / "minilm-l6").mkdir()
    (tmp_path / "minilm-l6" / "evaluate.json").write_text(json.dumps(evaluation))
    reread_monitor(table, tmp_path)
    rows = {m.model: m.rows for m in table.models}
    assert rows["minilm-l6"][9] == monitor_row(evaluation) and rows["minilm-l6"][9]["value"] == "1 of 2 kinds"
    assert rows["mpnet-base"][9]["value"] == "not measured" and "mpnet-base" in capsys.readouterr().err
    assert all(rows[m][k] == before[m][k] for m in rows for k in rows[m] if k != 9)
    assert table.settings["monitor_dir"] == str(tmp_path)
