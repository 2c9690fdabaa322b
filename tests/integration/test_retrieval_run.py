"""A small retrieval sweep trained, reused, refused with other settings, and analyzed (slow: trains)."""

import json

import pytest

from headlab.retrieval.analysis import AnalyzeResult
from headlab.retrieval.grid import SweepResult

from ..support import assert_round_trip

pytestmark = pytest.mark.slow


def test_train_sweep_and_analyze_a_small_run_end_to_end(tmp_path):
    from headlab.cli import main

    out = tmp_path / "sweep"
    args = ["retrieval", "sweep", "--layers", "1", "--depths", "1", "--curricula", "none,chain", "--seeds", "0",
            "--steps", "40", "--batch-size", "16", "--eval-every", "20", "--d-model", "32", "--no-progress",
            "--out", str(out)]
    assert main(args) == 0
    r = json.loads((out / "sweep.json").read_text())
    assert_round_trip(SweepResult, out / "sweep.json")
    assert set(r["cells"]) == {"L1-D1-none", "L1-D1-chain"} and len(r["runs"]) == 2
    assert (out / "success_map.png").stat().st_size > 0 and (out / "learning_curves.png").stat().st_size > 0
    assert "| 1 | " in (out / "sweep.md").read_text() and "log₃(2D)" in (out / "sweep.md").read_text()
    assert all(x["trained_with"] == "ensemble of 2" for x in r["runs"])  # one (layers, depth) = one ensemble
    rows = [json.loads(x) for x in (out / "L1-D1-chain-s0" / "eval.jsonl").read_text().splitlines()]
    assert [x["step"] for x in rows] == [20, 40] and 0 <= rows[-1]["accuracy"]["1"] <= 1
    assert main(args) == 0  # finished cells are reused, not retrained
    wider = [a if a != "1" or args[i - 1] != "--depths" else "1,2" for i, a in enumerate(args)]
    assert main(wider + ["--no-train"]) == 0  # a time-boxed sweep: the missing depth is shown, not trained
    partial = json.loads((out / "sweep.json").read_text())
    assert partial["cells"]["L1-D2-chain"]["seeds"] == 0 and partial["grid"]["not_run"] == 2
    assert not (out / "L1-D2-chain-s0").exists() and "not run" in (out / "sweep.md").read_text()
    other = [a if a != "40" else "60" for a in args]
    assert main(other) == 2  # the same folder with other settings is refused, not mixed
    assert main(args + ["--positions", "learned"]) == 2 and main(args + ["--warmup-steps", "7"]) == 2
    assert main(args + ["--init", "fan-in"]) == 2 and main(args + ["--untied"]) == 2
    assert main(args + ["--min-depth", "1"]) == 2  # a task field, not only the model's
    assert {(x["init"], x["untied"]) for x in r["runs"]} == {("default", False)}
    run = out / "L1-D1-chain-s0"
    assert main(["retrieval", "analyze", str(run), "--n", "8", "--draws", "2"]) == 0
    a = json.loads((run / "analyze" / "analyze.json").read_text())
    assert_round_trip(AnalyzeResult, run / "analyze" / "analyze.json")
    assert len(a["labels"]) == 1 and len(a["labels"][0]) == 4
    assert 0 <= a["ablation"]["accuracy_base"] <= 1 and a["emergence"]["steps"]
    assert sorted(a["ablation"]["single_head"]) == [f"0.{h}" for h in range(4)]
    assert all(0 <= v <= 1 for v in a["ablation"]["single_head"].values())
    ab, labelled = a["ablation"], any(x != "-" for row in a["labels"] for x in row)
    if ab["control_draws"]:  # the comparison from per-example answers agrees with the one from the accuracies
        c = ab["control"]
        assert c["draws"] == ab["control_draws"] and c["p_value"] == pytest.approx(ab["p_value"])
        assert c["delta_target"] == pytest.approx(ab["accuracy_labelled_ablated"] - ab["accuracy_base"])
        assert c["interval"][0] <= c["interval"][1] and c["matched"]
    else:  # no control is said, never printed as None
        assert ab["control"] is None and (ab["control_note"] if labelled else not ab["control_note"])
    assert main(["retrieval", "analyze", str(tmp_path)]) == 2  # not a retrieval run
    from headlab.notices import recorded
    from headlab.retrieval.training import checkpoint_models

    every = [s for s, _ in checkpoint_models(run)]
    victim = sorted((run / "checkpoints").glob("step-*"))[1]
    (victim / "model.safetensors").write_bytes(b"damaged")
    with recorded() as said:
        kept = [s for s, _ in checkpoint_models(run)]
    assert len(kept) == len(every) - 1 and any(victim.name in line for line in said)  # a gap, said, not an end
