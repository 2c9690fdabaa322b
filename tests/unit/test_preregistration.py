"""Pre-registration by code: a rule's fingerprint covers the functions that compute its statistic, every rule is
declared on the data that existed then, a verdict on that data is exploratory and never reads "supported", a rule
decides against the strongest null it names, and a claim about SDHs is judged on SDHs or says it is untestable."""

from __future__ import annotations

import importlib
import sys

import pytest

from headlab.rulebook import BOOK, Rule, Verdict, fingerprints, registration
from headlab.rulebook.book import Judgement
from headlab.rulebook.formation import early_prediction, three_stages
from headlab.rulebook.retrieval import head_order, hops_in_order

SUPPORTS = lambda s: Judgement(Verdict.SUPPORTED, "", "p")  # noqa: E731


def _rule(computed_by: tuple[str, ...] = ()) -> Rule:
    return Rule("test.rule", "doc", "claim", "statistic", "test", "threshold", "origin", "null", "minimum",
                SUPPORTS, computed_by=computed_by)


def test_editing_a_statistic_function_changes_the_fingerprint(tmp_path, monkeypatch):
    module = tmp_path / "my_statistic.py"
    module.write_text("def statistic(x):\n    return sum(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("my_statistic")
    rule = _rule(("my_statistic.statistic",))
    before = rule.fingerprint()
    assert before != _rule().fingerprint()
    module.write_text("def statistic(x):\n    return sum(x) / len(x)\n")
    importlib.reload(sys.modules["my_statistic"])
    assert rule.fingerprint() != before
    sys.modules.pop("my_statistic")


def test_every_rule_is_declared_under_its_current_fingerprint():
    """A rule whose text, decision or statistic code changed must be declared again (headlab verdicts --record in
    its own commit), on the data that exists then."""
    declared = registration.read()
    assert set(declared) == set(BOOK)
    stale = {rid for rid, fp in fingerprints().items() if declared[rid].fingerprint != fp}
    assert not stale, f"changed without a new declaration: {sorted(stale)}"


def test_every_rule_names_the_code_and_data_that_decide_it():
    for rule in BOOK.values():
        assert rule.computed_by, f"{rule.id} names no statistic function"
        assert rule.data, f"{rule.id} names no data"


def test_an_exploratory_rule_cannot_say_supported(monkeypatch):
    stats = {"x": 1.0}
    fresh = {"x": 2.0}
    rule = _rule()
    decl = registration.Declaration(7, rule.fingerprint(), {"results/a.json": "ab" * 8},
                                    (registration.stats_digest(stats),))
    monkeypatch.setattr(registration, "declarations", lambda: {"test.rule": decl})
    old = rule.judge(stats)
    assert old.verdict == Verdict.INCONCLUSIVE and old.exploratory and "exploratory" in old.reason
    assert rule.judge(fresh).verdict == Verdict.SUPPORTED  # data that first exists after the declaration
    assert rule.judge(fresh, evidence=["ab" * 32]).exploratory  # computed from a file that existed
    monkeypatch.setattr(registration, "declarations", lambda: {})
    assert rule.judge(fresh).verdict == Verdict.INCONCLUSIVE  # never declared: nothing was fixed before the data


def test_statistics_digest_alike_in_memory_and_read_back_from_json():
    import json

    import numpy as np

    stats = {"by_k": {1: 0, 3: np.int64(2)}, "g": (0.1, np.float64(0.2))}
    assert registration.stats_digest(stats) == registration.stats_digest(json.loads(json.dumps(
        {"by_k": {"1": 0, "3": 2}, "g": [0.1, 0.2]})))


def _prediction(gains: dict[str, list[float]], **more) -> dict:
    return {"seeds": 4, "gains": gains, "nulls": ["early_score_alone", "layer_index", "score_and_layer", "random"],
            "strongest": {f: "layer_index" for f in gains}, **more}


def test_early_prediction_decides_against_the_strongest_null():
    # the review's numbers: above the score alone, not above the layer index
    assert early_prediction(_prediction({"0.01": [0.088, -0.006, 0.212]})).verdict == Verdict.INCONCLUSIVE
    assert early_prediction(_prediction({"0.01": [0.2, 0.05, 0.3]})).verdict == Verdict.SUPPORTED
    only_score = {k: v for k, v in _prediction({"0.01": [0.328, 0.144, 0.532]}).items() if k != "nulls"}
    j = early_prediction(only_score)
    assert j.verdict == Verdict.INCONCLUSIVE and "declared null" in j.reason


def test_a_claim_about_sdhs_with_none_formed_is_untestable():
    nothing = {"target": "slash_mass", "runs": 8, "formed": 0, "top": [0.07, 0.17]}
    for decide, stats in ((three_stages, {"seeds": 8, "steps": 100_000, "heads": 0, "three": 0,
                                          "boundaries": [None, None]}),
                          (early_prediction, _prediction({}))):
        j = decide({**stats, **nothing})
        assert j.verdict == Verdict.INCONCLUSIVE
        assert j.reason == "untestable here: no head's mean slash_mass score reached 0.5 in 8 runs (no strict-rule " \
                           "record)"
        assert "0.17" in j.power
        strict = decide({**stats, **nothing, "definition": "strict rule", "transient": 1})
        assert strict.reason == "untestable here: no run of 8 ends with an SDH by the strict rule; 1 had one at " \
                                "some checkpoint only"
        assert decide({**stats, **nothing, "target": "sink"}).reason == "untestable here: no sink head formed in 8 runs"


def test_an_sdh_in_training_has_one_definition_read_two_ways():
    """The strict rule at each checkpoint: a head that passes once is transient, one passing at the end is stable;
    the induction study's record and the formation claims' gate read the same definition."""
    import numpy as np

    from headlab.formation.sdh import formed

    passed = np.zeros((4, 2, 3), dtype=bool)
    passed[1, 1, 0] = True                  # 1.0 passes at the second checkpoint only
    passed[2:, 0, 2] = True                 # 0.2 passes from the third checkpoint to the end
    f = formed([10, 20, 30, 40], passed)
    assert f.passing == {"0.2": [30, 40], "1.0": [20]} and f.final == ["0.2"]
    assert f.transient and f.stable and f.first_step == 20
    assert "1.0 at step 20 only (1 of 4 checkpoints)" in f.said()
    assert "0.2 at 2 checkpoints from step 30 (2 of 4 checkpoints, and at the end)" in f.said()
    once = formed([10, 20, 30, 40], passed * np.array([1, 1, 0, 0], dtype=bool)[:, None, None])
    assert once.transient and not once.stable and once.final == []
    assert not formed([10], np.zeros((1, 2, 3), dtype=bool)).transient


def test_three_stages_must_beat_the_heads_that_do_not_specialize():
    base = {"seeds": 3, "steps": 100_000, "heads": 6, "three": 6, "boundaries": [9000.0, 90000.0]}
    assert three_stages({**base, "null_heads": 30, "null_three": 22}).verdict == Verdict.INCONCLUSIVE
    assert three_stages({**base, "null_heads": 30, "null_three": 3}).verdict == Verdict.SUPPORTED
    assert "null" in three_stages(base).reason  # the declared null never measured: cannot support


def test_hop_order_excludes_vacuous_runs_and_head_order_needs_three_runs_to_refute():
    assert hops_in_order({"in_order": 12, "runs": 12}).verdict == Verdict.INCONCLUSIVE  # nothing excluded
    j = hops_in_order({"in_order": 8, "runs": 8, "excluded": {"two hops or fewer solved": 5, "a tie": 1}})
    assert j.verdict == Verdict.SUPPORTED and "5 (two hops or fewer solved)" in j.power
    short = hops_in_order({"in_order": 7, "runs": 7, "excluded": {}})  # in order, but below the calibrated minimum
    assert short.verdict == Verdict.INCONCLUSIVE and "underpowered: 7 runs, 8 needed" in short.reason
    assert head_order({"cells": {"a": [1, 2]}}).verdict == Verdict.INCONCLUSIVE  # two runs cannot refute
    assert head_order({"cells": {"a": [1, 3]}}).verdict == Verdict.NOT_SUPPORTED


def test_claims_about_sdhs_need_sdhs_beyond_the_placebo_null():
    from headlab.study.claim_rows import about_real_sdhs

    within = {"consecutive": 3, "populations": {"slash suite": {"count": 1, "samples": 64, "placebo": [1] * 20}}}
    spec = {"rule": "slash.3", "stats": {"interval": [6.0, 5.5, 6.5], "sdhs": 1}}
    rows = about_real_sdhs({1: {"rule": "slash.1", "stats": within}, 3: spec})
    assert rows[3]["verdict"] == "inconclusive" and rows[3]["reason"] == "no SDH beyond the placebo null"
    beyond = {**within, "populations": {"slash suite": {"count": 3, "samples": 64, "placebo": [0] * 20}}}
    rows = about_real_sdhs({1: {"rule": "slash.1", "stats": beyond}, 3: spec})
    assert rows[3]["stats"]["beyond_null"] is True and "no SDH" not in rows[3]["reason"]


@pytest.mark.parametrize("rid", ["formation.stages", "formation.prediction", "formation.init"])
def test_formation_rules_name_the_documents_object(rid):
    assert "SDH" in BOOK[rid].statistic and "untestable" in BOOK[rid].minimum


def test_a_field_added_to_declared_statistics_leaves_them_exploratory():
    """The declaration keeps each committed statistics' parts: the same data with a field added beside it is still
    the data that existed (its digest alone moved), while other counts are other data."""
    import json
    from pathlib import Path

    claims = json.loads((Path(__file__).resolve().parents[2] / "results/study/claims/claims.json").read_text())
    stats = claims["claims"][1]["per_model"]["minilm-l6"]["stats"]
    assert registration.is_exploratory("slash.2", stats)
    assert registration.is_exploratory("slash.2", {**stats, "note": "added by hand"})
    assert not registration.is_exploratory("slash.2", {**stats, "count": stats["count"] + 5})


def test_recording_refuses_while_committed_data_is_moved_aside(tmp_path):
    """A rule declared while its data's folder is moved aside would not know that data existed: --record refuses,
    in one line naming a missing file, before any table is rewritten."""
    import shutil
    import subprocess
    from pathlib import Path

    import headlab
    from headlab.errors import HeadlabError

    root = tmp_path / "results"
    shutil.copytree(Path(__file__).resolve().parents[2] / "results" / "retrieval", root / "retrieval")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "results"], check=True)
    subprocess.run([*git, "commit", "-qm", "results"], check=True)
    assert registration.tracked_but_missing(root, BOOK["retrieval.depth-bound"].data) == []
    shutil.move(str(root / "retrieval" / "depth_law"), str(tmp_path / "aside"))
    missing = registration.tracked_but_missing(root, BOOK["retrieval.depth-bound"].data)
    assert missing and all(m.startswith("results/retrieval/depth_law/") for m in missing)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(HeadlabError, match="is committed but not there") as e:
        headlab.verdicts(root, record="a rule moved")
    assert "\n" not in str(e.value)
    assert before == {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_refutation_counts_only_fractions_where_the_gain_was_possible():
    """The small-qk sink arm: the strongest null's AUROC is 1.000 and 0.993 at 5% and 10% of training, where no
    gain of 0.02 was possible; a refutation rests on the fractions that left room, and with none it is untestable."""
    low = {"0.01": [-0.005, -0.031, 0.0], "0.05": [-0.011, -0.058, 0.0], "0.1": [-0.022, -0.098, 0.0]}
    aurocs = {"0.01": {"layer_index": 0.965}, "0.05": {"layer_index": 1.0}, "0.1": {"layer_index": 0.993}}
    j = early_prediction(_prediction(low, aurocs=aurocs))
    assert j.verdict == Verdict.NOT_SUPPORTED and "at 0.05, 0.1 the strongest null leaves less than 0.02" in j.power
    full = {f: {"layer_index": 0.995} for f in low}
    j = early_prediction(_prediction(low, aurocs=full))
    assert j.verdict == Verdict.INCONCLUSIVE and j.reason.startswith("untestable here: the strongest null is at its")
    assert early_prediction(_prediction(low)).verdict == Verdict.NOT_SUPPORTED  # no AUROCs kept: judged as before


def _rerun(d: dict, **inputs) -> dict:
    """An evaluation "run again": every AUROC moved a little (new bytes, new statistics), ``inputs`` changed."""
    import copy

    d = copy.deepcopy({**d, **inputs})
    for row in d["kinds"].values():
        for m, (a, lo, hi) in row["auroc"].items():
            row["auroc"][m] = [a * 0.999, lo * 0.999, hi * 0.999]
        if row.get("heads_vs_best"):
            row["heads_vs_best"] = [x + 1e-4 for x in row["heads_vs_best"]]
    return d


def test_a_rerun_of_declared_data_stays_exploratory_however_its_bytes_differ(tmp_path, monkeypatch):
    """The committed minilm-l6 evaluation run again on the same reference (its statistics and bytes all new) reads
    exploratory by its identity; the same numbers from another reference read as new data. The declaration is made
    here, on a copy of the committed file, into a declarations file of the test's own."""
    import json
    from pathlib import Path

    from headlab.monitor.comparison import EvaluationResult
    from headlab.rulebook.book import now

    root = tmp_path / "results"
    (root / "monitor" / "m").mkdir(parents=True)
    committed = json.loads((Path(__file__).resolve().parents[2] / "results/monitor/minilm-l6/evaluate.json")
                           .read_text())
    (root / "monitor" / "m" / "evaluate.json").write_text(json.dumps(committed))
    declared = tmp_path / "declared.json"
    fps, code = now()
    registration.declare({"monitor.kind": fps["monitor.kind"]}, {"monitor.kind": ()}, {}, root, 0, code, declared)
    assert registration.read(declared)["monitor.kind"].identities  # one per kind of the evaluation
    monkeypatch.setattr(registration, "DECLARED", declared)
    monkeypatch.setattr(registration, "declarations", lambda: registration.read(declared))

    def exploratory(doc: dict) -> set[bool]:
        r = registration.judged_as_produced(EvaluationResult.from_json(doc))
        return {row["verdict"].startswith("exploratory") for row in r.kinds.values()}

    assert exploratory(_rerun(committed)) == {True}
    assert exploratory(_rerun(committed, reference=["pydoc"])) == {False}
    # the identity is what produced the data, not what it says: the kinds' rows and their verdicts are not inputs
    same = registration.identities("evaluate.json", _rerun(committed))
    assert same == registration.identities("evaluate.json", committed)


def test_a_claims_table_rerun_on_a_declared_model_stays_exploratory(tmp_path, monkeypatch):
    """Claims identities are per model and settings: the same model at the same settings is declared data; at
    another seed it is new."""
    import json
    from pathlib import Path

    committed = json.loads((Path(__file__).resolve().parents[2] / "results/study/claims/claims.json").read_text())
    ids = registration.identities("claims.json", committed)
    assert len(ids) == len(committed["models"]) == len(set(ids))
    moved = {**committed, "settings": {**committed["settings"], "monitor_dir": "elsewhere"}}
    assert registration.identities("claims.json", moved) == ids  # where evaluations were read is not an input
    reseeded = {**committed, "settings": {**committed["settings"], "seed": 1}}
    assert set(registration.identities("claims.json", reseeded)).isdisjoint(ids)
    monkeypatch.setattr(registration, "declarations", lambda: {
        "slash.2": registration.Declaration(0, "x", {}, (), {}, (), tuple(ids))})
    stats = {"count": 12, "heads": 72, "a field never declared": 1}
    with registration.produced_from(ids[:1]):
        assert registration.is_exploratory("slash.2", stats)
    with registration.produced_from(registration.identities("claims.json", reseeded)[:1]):
        assert not registration.is_exploratory("slash.2", stats)


def test_a_retrieval_run_rerun_with_its_recipe_and_seed_is_declared_data(tmp_path, monkeypatch):
    """A retrieval run's identity is its recipe and seed: the same run trained again (every outcome and byte new)
    is the data a declaration saw; another seed is new data. Each retrieval rule is judged under the runs its data
    globs match, so a declared run in one study does not make another study's rule exploratory."""
    import json
    import shutil
    from pathlib import Path

    from headlab.retrieval.verdicts import run_identities

    run = Path(__file__).resolve().parents[2] / "results/retrieval/depth_edge/L2-D4/L2-D4-dense-s0"
    committed = json.loads((run / "summary.json").read_text())
    ids = registration.identities("summary.json", committed)
    again = {**committed, "final_loss": 0.5, "final_hops": {"1": 0.1}, "eval_n": 7, "checkpoint_every": 3}
    assert registration.identities("summary.json", again) == ids and len(ids) == 1
    assert registration.identities("summary.json", {**committed, "seed": 99}) != ids

    root = tmp_path / "results"
    cell = root / "retrieval" / "depth_edge" / "L2-D4" / run.name
    cell.mkdir(parents=True)
    shutil.copy(run / "eval.jsonl", cell / "eval.jsonl")
    (cell / "summary.json").write_text(json.dumps(again))
    (root / "retrieval" / "order" / "x").mkdir(parents=True)
    (root / "retrieval" / "order" / "x" / "analyze.json").write_text("{}")  # no run of its own: no identity
    found = run_identities(root / "retrieval")
    assert found["retrieval.depth-edge"] == frozenset(ids) and not found["retrieval.pair-order"]

    monkeypatch.setattr(registration, "declarations", lambda: {
        "retrieval.depth-edge": registration.Declaration(0, "x", {}, (), {}, (), tuple(ids)),
        "retrieval.pair-order": registration.Declaration(0, "x", {}, (), {}, (), tuple(ids))})
    stats = {"cells": {}}
    with registration.produced_from(found):
        assert registration.is_exploratory("retrieval.depth-edge", stats)
        assert not registration.is_exploratory("retrieval.pair-order", stats)  # it judges none of these runs


def test_an_induction_study_rerun_with_its_arms_and_seeds_is_declared_data():
    import json
    from pathlib import Path

    import headlab.formation.induce.study  # noqa: F401 - registers induce.json

    committed = json.loads((Path(__file__).resolve().parents[2] / "results/induction/induce.json").read_text())
    s = committed["settings"]
    ids = registration.identities("induce.json", committed)
    assert len(set(ids)) == len(s["arms"]) * len(s["seeds"])
    rerun = {**committed, "summary": {}}  # every outcome new
    assert registration.identities("induce.json", rerun) == ids
    more = {**committed, "settings": {**s, "seeds": [*s["seeds"], 9]}}
    assert set(ids) < set(registration.identities("induce.json", more))  # new seeds add new data beside the old


def test_formation_runs_trained_again_from_their_configs_are_declared_data(tmp_path):
    """A formation claims table's identity is each run's folder and training config: the same configs trained
    again into other folders are the declared runs; a run of another seed is new data."""
    import copy
    import json
    from pathlib import Path

    from headlab.formation.claims import run_config

    root = Path(__file__).resolve().parents[2]
    committed = json.loads((root / "results/formation/long/claims/formation_claims.json").read_text())
    assert committed["produced"] == [run_config(root / r) for r in committed["runs"]]  # what the table records
    ids = set(registration.identities("formation_claims.json", committed))
    elsewhere = {**committed, "runs": [str(tmp_path / f"s{i}") for i in range(len(committed["runs"]))], "rows": []}
    assert not ids.isdisjoint(registration.identities("formation_claims.json", elsewhere))
    reseeded = copy.deepcopy(elsewhere)
    for config in reseeded["produced"]:
        config["optim"]["seed"] = 1000 + config["optim"].get("seed", 0)
    assert ids.isdisjoint(registration.identities("formation_claims.json", reseeded))
