"""The rule book: every rule declared once, fingerprinted against its ledger (results/verdict_changes.json), and
each test it uses checked against an independent computation (brute-force enumeration, scipy)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import fisher_exact, permutation_test

from headlab.reporting.ledger import recorded
from headlab.rulebook import BOOK, VERSION, Verdict, fingerprints
from headlab.rulebook.decide import detectable_rate, exceeds_null, fisher_power, run_probability
from headlab.rulebook.slash import CONTROL_MINIMUM, KIND_MARGIN, MIN_KIND_DOCUMENTS, PLACEBO_MINIMUM

ROOT = Path(__file__).resolve().parents[2]


def test_the_rule_book_matches_its_latest_recorded_version():
    """A rule's text or decision changes only in a commit that bumps VERSION and records the re-judged results
    (headlab verdicts --record): the fingerprints of the book and of the file's latest section agree."""
    latest = recorded(ROOT / "results")
    assert latest is not None and latest.version == VERSION
    assert latest.fingerprints == fingerprints(), "a rule changed without a ledger entry: run headlab verdicts " \
                                                  "--record WHY after bumping rulebook.book.VERSION"


def test_every_rule_declares_its_parts():
    for rule in BOOK.values():
        for part in ("claim", "statistic", "test", "threshold", "origin", "null", "minimum"):
            assert getattr(rule, part).strip(), f"{rule.id} has no {part}"
        assert rule.judge(None).verdict == Verdict.NOT_MEASURED


def test_a_changed_rule_changes_its_fingerprint():
    import dataclasses

    rule = BOOK["slash.8"]
    assert dataclasses.replace(rule, threshold=rule.threshold + " ").fingerprint() != rule.fingerprint()


@pytest.mark.parametrize("n,k", [(6, 3), (9, 3), (8, 2)])
def test_run_probability_against_enumeration(n, k):
    q = 0.3
    total = 0.0
    for seq in itertools.product((0, 1), repeat=n):
        if "1" * k in "".join(map(str, seq)):
            total += q ** sum(seq) * (1 - q) ** (n - sum(seq))
    assert run_probability(q, n, k) == pytest.approx(total, abs=1e-12)


def test_detectable_rate_is_where_power_crosses():
    q = detectable_rate(512, 3)
    assert run_probability(q, 512, 3) == pytest.approx(0.8, abs=1e-6)
    assert detectable_rate(40, 3) > q  # fewer samples: only a more frequent head is found


def test_placebo_null_needs_enough_placebos():
    assert exceeds_null(1, [0] * PLACEBO_MINIMUM, PLACEBO_MINIMUM).verdict == Verdict.SUPPORTED
    assert exceeds_null(1, [0] * 8, PLACEBO_MINIMUM).verdict == Verdict.INCONCLUSIVE
    assert exceeds_null(1, [0] * 18 + [1], PLACEBO_MINIMUM).verdict == Verdict.NOT_SUPPORTED  # 95th pct is 1
    assert exceeds_null(0, [0] * 19, PLACEBO_MINIMUM).verdict == Verdict.NOT_SUPPORTED
    assert exceeds_null(2, [], PLACEBO_MINIMUM).reason == "no placebo null"


def _ablation(effect, draws, p, sdhs=1):
    return BOOK["slash.8"].judge({"causal": True, "effect": effect, "draws": draws, "p": p, "sdhs": sdhs,
                                  "no_target_effect": -1.0, "control_effect": -1.0})


def test_causal_claim_reads_its_controls():
    # smollm2-135m's committed ablation: -2.46 [-6.34, 0.785], 10 control sets, p = 0.909
    j = _ablation([-2.46, -6.34, 0.785], 10, 0.909)
    assert j.verdict == Verdict.INCONCLUSIVE and "underpowered" in j.reason
    assert _ablation([-2.46, -6.34, 0.785], CONTROL_MINIMUM, 0.9).verdict == Verdict.NOT_SUPPORTED
    assert _ablation([-2.5, -2.9, -2.1], CONTROL_MINIMUM, 0.0099).verdict == Verdict.SUPPORTED
    assert _ablation([-2.5, -4.0, 0.5], CONTROL_MINIMUM, 0.0099).reason == "interval includes zero"
    assert _ablation([-9.0, -12.0, -6.0], 10, 0.5).verdict == Verdict.NOT_SUPPORTED  # outside the range
    assert _ablation([-2.5, -2.9, -2.1], CONTROL_MINIMUM, 0.0099, sdhs=0).reason == "no SDH"


def test_monitor_kind_needs_a_margin():
    # minilm-l6 on paths: heads 1.000 against the bigram baseline's 0.9988, intervals apart: a tie by the margin
    tie = {"heads": [1.0, 0.99999, 1.0], "baseline": [0.9988, 0.9973, 0.9998], "paired": None}
    assert BOOK["monitor.kind"].judge(tie).reason == "tie"
    better = {"heads": [0.95, 0.93, 0.97], "baseline": [0.90, 0.88, 0.92], "paired": [0.05, 0.01, 0.08],
              "documents": MIN_KIND_DOCUMENTS}
    assert BOOK["monitor.kind"].judge(better).reason == "heads better"
    # below the evidence the rule is calibrated at, heads better by the interval is not a support
    few = BOOK["monitor.kind"].judge({**better, "documents": MIN_KIND_DOCUMENTS - 1})
    assert few.verdict == Verdict.INCONCLUSIVE and "underpowered" in few.reason
    assert "unrecorded" in BOOK["monitor.kind"].judge({**better, "documents": None}).reason
    worse = {**better, "heads": better["baseline"], "baseline": better["heads"], "paired": [-0.05, -0.08, -0.01]}
    assert BOOK["monitor.kind"].judge({**worse, "documents": 10}).reason == "baseline better"  # a refutation stands
    near = {**better, "paired": [KIND_MARGIN / 2, 0.001, 0.02], "heads": [0.91, 0.9, 0.92]}
    assert BOOK["monitor.kind"].judge(near).reason == "tie"


def test_fisher_power_against_scipy():
    said = fisher_power(2, 25, 0, 5)
    p = fisher_exact([[2, 23], [0, 5]], alternative="greater")[1]
    assert f"p = {p:.3f}" in said
    need = int(said.split("; ")[1].split(" of ")[0]) if "would have been" in said else None
    if need is not None:
        assert fisher_exact([[need, 25 - need], [0, 5]], alternative="greater")[1] < 0.05
        assert fisher_exact([[need - 1, 26 - need], [0, 5]], alternative="greater")[1] >= 0.05


@pytest.mark.parametrize("k1,n1,k2,n2", [(3, 3, 0, 3), (4, 4, 0, 4), (5, 5, 0, 5), (5, 6, 1, 6), (4, 6, 1, 6),
                                         (0, 5, 0, 5), (1, 5, 2, 5)])
def test_fostering_a_head_against_scipy(k1, n1, k2, n2):
    """formation.foster: supported exactly when both arms hold its minimum of seeds, the arm forms an SDH in more
    seeds than the plain arm and scipy's one-sided Fisher p is under 0.05 (fewer seeds a side are underpowered: every
    seed against none must clear Holm's bound for the study's levers)."""
    from headlab.rulebook.formation import MIN_FOSTER_SEEDS

    j = BOOK["formation.foster"].judge({"arm": [k1, n1], "plain": [k2, n2]})
    p = fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="greater")[1]
    enough = min(n1, n2) >= MIN_FOSTER_SEEDS
    assert (j.verdict == Verdict.SUPPORTED) == (enough and k1 / n1 > k2 / n2 and p < 0.05)
    if not enough:
        assert j.reason.startswith("underpowered")
    assert f"p = {p:.3f}" in j.power
    assert BOOK["formation.foster"].judge({"null_arm": True}).verdict == Verdict.NA


def test_depth_law_needs_seeds():
    one = {"cells": [{"layers": L, "d_max": [d], "bound": 3 ** L / 2, "trained_depth": 8}
                     for L, d in ((1, 0), (2, 2), (3, 4))]}
    j = BOOK["retrieval.depth-bound"].judge(one)
    assert j.verdict == Verdict.INCONCLUSIVE and j.reason == "1 seed"
    three = {"cells": [{**c, "d_max": c["d_max"] * 3} for c in one["cells"]]}
    assert BOOK["retrieval.depth-bound"].judge(three).verdict == Verdict.SUPPORTED
    # 2 -> 4 hops from two to three layers is closer to +1 hop than to x3 on log(1 + D)
    assert BOOK["retrieval.depth-rate"].judge(three).verdict == Verdict.NOT_SUPPORTED
    over = {"cells": [{"layers": 1, "d_max": [2, 0, 0], "bound": 1.5, "trained_depth": 4}]}
    assert BOOK["retrieval.depth-bound"].judge(over).verdict == Verdict.NOT_SUPPORTED


def _edge_folder(root: Path, solves: dict[tuple[int, int], list[int]], flat: bool = True) -> None:
    """Study folders of dense runs: per cell, each seed's eval.jsonl (a loss falling, flat at the end or not;
    hops 1..k at 0.99 on the last row) and its summary."""
    import json

    for (layers, depth), ks in solves.items():
        for seed, k in enumerate(ks):
            run = root / "depth_edge" / f"L{layers}-D{depth}" / f"L{layers}-D{depth}-dense-s{seed}"
            run.mkdir(parents=True)
            losses = [0.2 + 0.3 * math.exp(-i / 5) if flat else 1.0 - i / 50 for i in range(40)]
            hops = {str(h): 0.99 if h <= k else 0.6 for h in range(1, depth + 1)}
            (run / "eval.jsonl").write_text("".join(json.dumps({"step": 100 * (i + 1), "loss": x, "hops": hops}) + "\n"
                                                    for i, x in enumerate(losses)))
            (run / "summary.json").write_text(json.dumps({"n_layers": layers, "task": {"depth": depth,
                                                                                       "curriculum": "dense"}}))


@pytest.mark.parametrize("solves, flat, verdict, reason", [
    ({(1, 2): [1] * 3, (2, 4): [4, 3, 3], (2, 5): [3] * 3, (2, 6): [3] * 3}, True, Verdict.SUPPORTED, ""),
    ({(1, 2): [1] * 3, (2, 4): [3] * 3, (2, 5): [3] * 3, (2, 6): [2] * 3}, True, Verdict.INCONCLUSIVE,
     "bound not reached: two layers solve 3 hops at most"),
    ({(1, 2): [1] * 3, (2, 4): [4] * 3, (2, 5): [5, 3, 3]}, False, Verdict.NOT_SUPPORTED,
     "L2 solves 5 hops, above 3^L/2 = 4.5"),
    ({(1, 2): [2, 1, 1]}, True, Verdict.NOT_SUPPORTED, "L1 solves 2 hops, above 3^L/2 = 1.5"),
    ({(1, 2): [1] * 3, (2, 4): [4] * 3, (2, 5): [4] * 3, (2, 6): [4] * 3}, False, Verdict.INCONCLUSIVE,
     "under 3 seeds trained to a plateau at L1-D2, L2-D4, L2-D5, L2-D6"),
    ({(1, 2): [1] * 3, (2, 4): [4] * 3, (2, 5): [4, 4]}, True, Verdict.INCONCLUSIVE,
     "under 3 seeds trained to a plateau at L2-D5, L2-D6"),
])
def test_the_depth_edge_reads_its_runs(tmp_path, solves, flat, verdict, reason):
    """From run folders: refuted by a run above the bound whether or not it flattened, supported only when two
    layers reach 4 hops with every cell's seeds at a plateau; a cell not run is said."""
    from headlab.retrieval.edge import edge_stats

    _edge_folder(tmp_path, solves, flat)
    stats, files = edge_stats(tmp_path)
    assert len(files) == 2 * sum(map(len, solves.values()))
    j = BOOK["retrieval.depth-edge"].decide(stats)
    assert (j.verdict, j.reason) == (verdict, reason)
    assert ("L2-D6: not run" in j.power) == ((2, 6) not in solves)


def test_plateau_reads_a_decline_through_the_scatter(tmp_path):
    from headlab.retrieval.edge import edge_stats, plateaued

    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.03, 100)
    assert plateaued(list(0.2 + noise))                                # flat, however noisy
    assert not plateaued(list(np.linspace(0.5, 0.1, 100) + noise))     # still falling by far more than the scatter
    assert not plateaued([0.3] * 9)                                    # too few rows to say
    assert edge_stats(tmp_path) == (None, [])                          # no study yet: not measured


def test_order_rules_are_two_claims():
    assert BOOK["retrieval.hop-order"].judge({"in_order": 12, "runs": 12, "excluded": {}}).verdict == Verdict.SUPPORTED
    assert BOOK["retrieval.hop-order"].judge({"in_order": 4, "runs": 4}).verdict == Verdict.INCONCLUSIVE
    cells = {"cells": {"a": [1, 3], "b": [3, 3]}}
    assert BOOK["retrieval.head-order"].judge(cells).verdict == Verdict.NOT_SUPPORTED


def test_initialization_rule_against_scipy_permutation_test():
    a, b = [3, 4, 5], [0, 1, 1]
    j = BOOK["formation.init"].judge({"a": a, "b": b})
    ref = permutation_test((a, b), lambda x, y: np.mean(x) - np.mean(y), permutation_type="independent",
                           alternative="two-sided", n_resamples=math.inf).pvalue
    assert f"exact p = {ref:.3f}" in j.power


def test_early_prediction_with_nothing_to_predict_is_inconclusive_not_refuted():
    """Without a single measured gain (no head specialized), 'every upper end under 0.02' holds vacuously; the
    rule must not read that as not supported."""
    j = BOOK["formation.prediction"].judge({"seeds": 3, "gains": {}})
    assert j.verdict == Verdict.INCONCLUSIVE and "nothing to predict" in j.reason
    nulls = ["early_score_alone", "layer_index", "score_and_layer", "random"]
    low = BOOK["formation.prediction"].judge({"seeds": 3, "gains": {"1%": [-0.1, -0.2, 0.01]}, "nulls": nulls})
    assert low.verdict == Verdict.NOT_SUPPORTED


def test_initialization_rule_can_reach_its_threshold_at_its_minimum():
    """At the declared minimum of seeds, a complete separation of the two arms is supported; below it, the
    smallest reachable p is above 0.05 and the verdict is underpowered."""
    from headlab.rulebook.formation import MIN_INIT_SEEDS

    n = MIN_INIT_SEEDS
    apart = BOOK["formation.init"].judge({"a": list(range(10, 10 + n)), "b": list(range(n))})
    assert apart.verdict == Verdict.SUPPORTED
    below = BOOK["formation.init"].judge({"a": list(range(10, 9 + n)), "b": list(range(n - 1))})
    assert below.verdict == Verdict.INCONCLUSIVE and below.reason == "underpowered"
    three = BOOK["formation.init"].judge({"a": [10, 11, 12], "b": [0, 1, 2]})
    assert "smallest reachable 0.100" in three.power  # why the minimum is never below 4


def test_committed_verdicts_follow_from_the_rule_book():
    """Every committed claims table and the retrieval table are what the current rule book says of their
    statistics (a rule changed without `headlab verdicts` re-judging them fails here)."""
    import json

    from headlab.retrieval import verdicts as retrieval_verdicts
    from headlab.study.claims import ClaimsResult

    for path in sorted((ROOT / "results").glob("**/claims.json")):
        committed = ClaimsResult.read(path)
        assert json.loads(json.dumps(committed.to_json()))["rulebook"] == VERSION
        fresh = ClaimsResult.read(path).rejudged()
        for old, new in zip(committed.models, fresh.models):
            for cid, row in old.rows.items():
                assert "stats" in row and "rule" in row, f"{path}: claim {cid} of {old.model} keeps no statistics"
                assert (row["verdict"], row["reason"]) == (new.rows[cid]["verdict"], new.rows[cid]["reason"])
    table = retrieval_verdicts.RetrievalVerdictsResult.read(ROOT / "results" / "retrieval")
    assert table.rulebook == VERSION
    fresh_rows = retrieval_verdicts.judge(ROOT / "results" / "retrieval").rows
    assert [(r["row"], r["verdict"], r["reason"]) for r in table.rows] == \
        [(r["row"], r["verdict"], r["reason"]) for r in fresh_rows]


def test_no_depth_law_is_supported_from_one_seed():
    from headlab.retrieval import verdicts as retrieval_verdicts

    for r in retrieval_verdicts.rows(ROOT / "results" / "retrieval"):
        if r["rule"].startswith("retrieval.depth") and r["verdict"] == "supported":
            assert all(len(c["d_max"]) >= 3 for c in r["stats"]["cells"]), r["row"]
    rules = {r["rule"] for r in retrieval_verdicts.rows(ROOT / "results" / "retrieval")}
    assert {"retrieval.hop-order", "retrieval.head-order", "retrieval.depth-rate"} <= rules


def test_claim_9_reveals_a_kind_apart_from_chance_and_ours_beats_the_baseline_apart():
    """The document's claim 9 (the heads reveal a kind at all) and ours (better than the best attention-free
    baseline) are two rules: on the committed minilm-l6 evaluation the heads reveal kinds that no baseline loses
    to them on, and each row says so."""
    import json
    from pathlib import Path

    from headlab.rulebook.slash import MIN_KIND_DOCUMENTS, reveal_kind, reveals

    n = MIN_KIND_DOCUMENTS
    assert reveal_kind({"heads": [0.7, 0.65, 0.75], "documents": n}).reason == "revealed"
    assert "underpowered" in reveal_kind({"heads": [0.7, 0.65, 0.75], "documents": n - 1}).reason
    assert reveal_kind({"heads": [0.5, 0.45, 0.515], "documents": n}).verdict == Verdict.NOT_SUPPORTED
    assert reveal_kind({"heads": [0.53, 0.49, 0.57], "documents": n}).reason == "not apart from chance"
    chance = {"heads": [0.5, 0.46, 0.51], "documents": n}
    assert reveals({"kinds": {"a": {"heads": [0.7, 0.65, 0.75], "documents": n}, "b": chance}}).verdict == \
        Verdict.SUPPORTED
    assert reveals({"kinds": {"a": chance, "b": chance}}).reason == "every kind at chance"
    # six kinds barely apart (one-sided p about 0.02 each) do not survive Holm's correction over the six
    near = {"heads": [0.545, 0.5025, 0.5875], "documents": n}
    assert reveals({"kinds": {str(i): near for i in range(6)}}).verdict == Verdict.INCONCLUSIVE

    table = json.loads((Path(__file__).resolve().parents[2] / "results/study/claims/claims.json").read_text())
    rows = {c["id"]: c for c in table["claims"]}
    assert rows[9]["rule"] == "slash.9" and rows[10]["rule"] == "monitor.beats"
    nine, ten = rows[9]["per_model"]["minilm-l6"], rows[10]["per_model"]["minilm-l6"]
    assert "the statistic alone would read supported" in nine["reason"]  # revealed, but on data older than its rule
    assert ten["verdict"] == "not supported" and ten["exploratory"]
