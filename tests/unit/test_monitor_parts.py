"""The head monitor's parts on tiny inputs: the baselines, the derived kinds, streaming fingerprints, the
profile math and its calibration check."""

import random
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from headlab.ablation.metrics import window_losses
from headlab.errors import HeadlabError
from headlab.monitor import fingerprint
from headlab.monitor.anomalies import Context, derive
from headlab.monitor.baselines import char_features
from headlab.monitor.calibration import calibration_curve
from headlab.monitor.comparison import auroc as _auroc
from headlab.monitor.comparison import auroc_gain
from headlab.monitor.evaluation import installed_kinds
from headlab.monitor.profile import Profile, fit_profile, held_out


def test_character_classes_of_a_known_string() -> None:
    letters, digits, space, punct, upper, non_ascii, word = char_features("Ab 1/ é")
    assert (letters, digits, space, punct, upper) == (3 / 7, 1 / 7, 2 / 7, 1 / 7, 1 / 7)
    assert non_ascii == 1 / 7 and word == pytest.approx((2 + 2 + 1) / 3)


def test_derived_kinds_change_what_they_say() -> None:
    prose = ["the quick brown fox jumps over the lazy dog near the river bank today"]
    rng = random.Random(0)
    ctx = Context(vocab=["xa", "yb"], code=["import os\n\ndef f(x):\n    return os.path.join(x, 'y')\n"])
    shuffled = derive(prose, "shuffled", rng, ctx)[0]
    assert sorted(shuffled.split()) == sorted(prose[0].split()) and shuffled != prose[0]
    assert derive(prose, "boilerplate", rng, ctx)[0].count("the quick brown fox") == 8
    assert derive(prose, "paths", rng, ctx)[0].count("/") >= 6
    assert set(derive(prose, "random-tokens", rng, ctx)[0].split()) <= {"xa", "yb"}


def test_auroc_interval_holds_its_point() -> None:
    rng = np.random.default_rng(0)
    point, lo, hi = _auroc(rng.normal(0, 1, 200), rng.normal(1, 1, 200), rng)
    assert 0.7 < point < 0.85 and lo <= point <= hi


def test_bootstrap_aurocs_equal_sklearns_draw_for_draw() -> None:
    """The rank AUROC and its bootstraps against sklearn's roc_auc_score on the same draws, with ties."""
    from sklearn.metrics import roc_auc_score

    def sk(a, b):
        return roc_auc_score(np.r_[np.zeros(len(a)), np.ones(len(b))], np.r_[a, b])

    rng = np.random.default_rng(1)
    neg, pos = np.round(rng.normal(0, 1, 120), 1), np.round(rng.normal(0.4, 1, 30), 1)  # rounded: many ties
    neg2, pos2 = neg + rng.normal(0, 0.3, 120), pos + rng.normal(0, 0.3, 30)
    draw = np.random.default_rng(7)
    boots = [sk(draw.choice(neg, 120), draw.choice(pos, 30)) for _ in range(200)]
    assert _auroc(neg, pos, np.random.default_rng(7), 200) == pytest.approx(
        [sk(neg, pos), *np.percentile(boots, [2.5, 97.5])], abs=1e-12)
    draw = np.random.default_rng(8)
    gains = []
    for _ in range(200):
        i, j = draw.integers(0, 120, 120), draw.integers(0, 30, 30)
        gains.append(sk(neg2[i], pos2[j]) - sk(neg[i], pos[j]))
    assert auroc_gain((neg2, pos2), (neg, pos), np.random.default_rng(8), 200) == pytest.approx(
        [sk(neg2, pos2) - sk(neg, pos), *np.percentile(gains, [2.5, 97.5])], abs=1e-12)


def test_profile_flags_about_its_false_positive_rate_on_fresh_reference_data() -> None:
    rng = np.random.default_rng(1)
    docs = [f"d{i}" for i in range(3000)]
    mix = rng.normal(size=(5, 5))  # correlated features

    def draw(n: int) -> np.ndarray:
        x = rng.normal(size=(n, 5)) @ mix
        x[:, 4] = 0.0  # a constant feature: scale 1, no division by zero
        return x

    X = draw(3000)
    prof = fit_profile(X, docs, [f"f/{i}" for i in range(5)], 0.05, model="m", corpus=["c"], settings={})
    assert prof.n_calibration == sum(held_out(d) for d in docs)
    fresh_rate = (prof.scores(draw(5000)) > prof.threshold).mean()  # documents the profile never saw
    assert 0.5 * prof.fpr <= fresh_rate <= 2 * prof.fpr
    shifted = X.copy()
    shifted[:, 0] += 10 * np.asarray(prof.scale)[0]
    assert (prof.scores(shifted) > prof.threshold).mean() > 0.9
    assert Profile.from_json(prof.to_json()) == prof
    assert prof.features == [f"f/{i}" for i in range(4)] and prof.settings["dropped_features"] == ["f/4"]
    with pytest.raises(HeadlabError, match="too few"):
        fit_profile(X[:20], docs[:20], ["a"] * 5, 0.05, model="m", corpus=["c"], settings={})


def _per_sample_table(path, n: int = 1000, seed: int = 0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"doc": [f"doc{int(d)}" for d in rng.integers(0, 70, n)],
                       "token/0.1": np.where(rng.random(n) < 0.3, np.nan, rng.random(n)).astype("float32"),
                       "entropy/0.0": rng.random(n).astype("float32"), "entropy/1.0": rng.random(n).astype("float32"),
                       "offset_delta/0.1": rng.integers(-3, 3, n).astype("int16")})
    df.to_parquet(path)
    return df


def test_streamed_fingerprints_equal_a_pandas_groupby(tmp_path, monkeypatch) -> None:
    df = _per_sample_table(tmp_path / "rows.parquet")
    monkeypatch.setattr(fingerprint, "BATCH_ROWS", 97)  # documents straddle many row batches
    feats = ["token/0.1", "entropy/1.0"]
    X, docs, n = fingerprint.fingerprints(tmp_path / "rows.parquet", feats)
    want = df[["doc", *feats]].fillna(0.0).groupby("doc", sort=True)
    assert docs == list(want.mean().index) and n.tolist() == want.size().tolist()
    np.testing.assert_allclose(X, want.mean().to_numpy(), rtol=1e-6)
    monkeypatch.setattr(fingerprint, "BUCKET_DOCS", 8)  # 70 documents in 9 buckets, some of them empty
    rank = {f"doc{i}": 69 - i for i in range(70)}  # the corpus order against the ids' order
    got = list(fingerprint.ordered_fingerprints(tmp_path / "rows.parquet", feats, rank, tmp_path))
    docs_in_order = [d for b in got for d in b[1]]
    assert docs_in_order == sorted(docs, key=rank.__getitem__) and not list(tmp_path.glob("bucket-*"))
    np.testing.assert_array_equal(np.concatenate([b[3] for b in got]), [rank[d] for d in docs_in_order])
    by_doc = dict(zip(docs, X))
    np.testing.assert_allclose(np.concatenate([b[0] for b in got]), [by_doc[d] for d in docs_in_order], rtol=1e-12)
    assert np.concatenate([b[2] for b in got]).tolist() == [dict(zip(docs, n.tolist()))[d] for d in docs_in_order]
    with pytest.raises(HeadlabError, match="the corpus changed"):
        list(fingerprint.ordered_fingerprints(tmp_path / "rows.parquet", feats, {"doc0": 0}, tmp_path))
    means = fingerprint.column_means(tmp_path / "rows.parquet")
    assert set(means) == {"token/0.1", "entropy/0.0", "entropy/1.0"}  # the offset diagonals are no score
    assert means["token/0.1"] == pytest.approx(df["token/0.1"].fillna(0).mean(), rel=1e-6)
    # every entropy head is a feature; other detectors give their top heads
    assert fingerprint.choose_features(means, 1) == ["entropy/0.0", "entropy/1.0", "token/0.1"]
    with pytest.raises(HeadlabError, match="same detectors"):
        fingerprint.fingerprints(tmp_path / "rows.parquet", ["sink/0.0"])


def test_window_losses_equal_the_models_own_loss_per_window() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2)).eval()
    loaded = SimpleNamespace(model=model, tokenizer=SimpleNamespace(pad_token_id=0))
    ids = [[5, 9, 13, 2, 7], [3, 4], [8, 8, 8, 8, 8, 8, 1]]  # padded together in one batch
    got = window_losses(loaded, ids, batch_size=3)
    with torch.no_grad():
        want = [float(model(input_ids=torch.tensor([r]), labels=torch.tensor([r])).loss) for r in ids]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_calibration_curve_counts_fresh_flags_at_each_target(tmp_path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 3))
    docs = [f"r{i}" for i in range(6000)]
    prof = fit_profile(X, docs, ["a/0.0", "b/0.0", "c/0.0"], 0.01, model="m", corpus=["c"], settings={})
    fresh = prof.scores(rng.normal(size=(4000, 3)))
    c = calibration_curve(prof, fresh, tmp_path / "cal.png", "m")
    assert [r["target"] for r in c["curve"]] == [0.005, 0.01, 0.02, 0.05, 0.1]
    for r in c["curve"]:  # same distribution: the rate is near its target (the threshold is an estimate too)
        assert r["flagged"] == int((fresh > np.quantile(prof.calibration_scores, 1 - r["target"])).sum())
        assert 0.5 * r["target"] <= r["rate"] <= 2 * r["target"] and r["interval"][0] <= r["rate"] <= r["interval"][1]
    assert c["within_band"] is True and (tmp_path / "cal.png").stat().st_size > 0


def test_a_named_kind_without_its_corpus_is_refused_and_a_default_one_skipped(monkeypatch, capsys) -> None:
    import importlib

    evaluate = importlib.import_module("headlab.monitor.evaluation")
    monkeypatch.setitem(evaluate.REAL, "man-ja", "/nonexistent/man-ja")
    with pytest.raises(HeadlabError, match="--kinds man-ja: .*leave man-ja out"):
        installed_kinds(["paths", "man-ja"])
    assert "man-ja" not in installed_kinds(None) and "paths" in installed_kinds(None)
    assert "kind man-ja skipped" in capsys.readouterr().err


def test_training_monitor_rules() -> None:
    from headlab.formation.head_monitor import PeakWatch, collapse_warnings, uniform_entropy
    from headlab.training.config import MonitorConfig

    assert uniform_entropy([3], causal=False) == pytest.approx(np.log(3))
    assert uniform_entropy([3], causal=True) == pytest.approx((0 + np.log(2) + np.log(3)) / 3)
    cfg = MonitorConfig(every=1)
    row = {"sink": np.full((2, 2), 0.95), "entropy": np.full((2, 2), 0.5)}
    assert [w["rule"] for w in collapse_warnings(row, cfg)] == ["all-sink"]
    row["sink"][0, 1] = 0.2  # one head still attends elsewhere
    row["entropy"][:] = 0.99
    assert [w["rule"] for w in collapse_warnings(row, cfg)] == ["entropy-uniform"]
    row["entropy"][:] = 0.01
    assert [w["rule"] for w in collapse_warnings(row, cfg)] == ["entropy-collapse"]

    watch = PeakWatch(specialized=0.5, drop=0.5)
    zeros = {m: np.zeros((1, 2)) for m in ("slash_mass", "previous-token", "induction")}
    series = [0.3, 0.8, 0.5, 0.35, 0.3, 0.6, 0.2]  # head 0.1's `/` mass: rises, falls below 0.4, recovers, falls
    said = []
    for v in series:
        row = {m: a.copy() for m, a in zeros.items()}
        row["slash_mass"][0, 1] = v
        said.append([w["message"] for w in watch.update(row)])
    assert [i for i, s in enumerate(said) if s] == [3, 6]  # said when it falls, again after it recovered
    assert "head 0.1 lost its slash_mass score: 0.35, down from a peak of 0.80" in said[3]


def test_a_feature_of_almost_no_spread_cannot_explode_a_z() -> None:
    """A head whose score barely moves in the reference (spread 1e-5) is measured against the spread floor: a
    change of 0.03 in attention mass is a z of 3, not of 3000."""
    from headlab.monitor.profile import SPREAD_FLOOR

    rng = np.random.default_rng(1)
    docs = [f"doc{i}" for i in range(400)]
    X = np.column_stack([rng.normal(0.5, 0.1, 400), 0.2 + rng.normal(0, 1e-5, 400), np.full(400, 0.3)])
    prof = fit_profile(X, docs, ["a", "b", "c"], 0.05, model="m", corpus=["c"], settings={})
    assert prof.features == ["a", "b"] and prof.settings["dropped_features"] == ["c"]
    assert prof.scale[1] == SPREAD_FLOOR
    new = np.array([[0.5, 0.23, 0.9]])  # c moved too, but it never varied: no z to give it
    assert abs(prof.z(new)[0, 1]) == pytest.approx(3.0, rel=0.01) and prof.z(new).shape == (1, 2)


def test_a_scored_copy_keeps_a_records_own_bytes():
    """--write-scores adds the two keys to the record's bytes; bytes that are not UTF-8 are not re-encoded."""
    import json

    from headlab.monitor.dataset import FLAG_KEY, SCORE_KEY, with_scores

    raw = b'{"id": "a", "text": "caf\xe9 \xff"}\n'
    out = with_scores(raw, 1.5, True)
    assert out.startswith(b'{"id": "a", "text": "caf\xe9 \xff"') and out.endswith(b"}\n")
    rec = json.loads(out.decode("utf-8", errors="replace"))
    assert rec[SCORE_KEY] == 1.5 and rec[FLAG_KEY] is True
    assert json.loads(with_scores(b"{}\n", 0.5, False)) == {SCORE_KEY: 0.5, FLAG_KEY: False}
    again = json.loads(with_scores(out, 2.0, False))  # keys already there: replaced, not doubled
    assert again[SCORE_KEY] == 2.0 and again[FLAG_KEY] is False


def test_rarity_is_minus_log_p_inside_the_calibration_and_keeps_ranking_past_it() -> None:
    from headlab.monitor.comparison import pvalues, rarest, rarity

    cal = np.arange(100, dtype=float)  # max 99, 90th percentile 89.1: a tail of 9.9
    inside = np.array([5.0, 50.0, 98.5])
    np.testing.assert_allclose(rarity(cal, inside), -np.log(pvalues(cal, inside)))
    beyond = rarity(cal, np.array([99.0, 100.0, 150.0, 1e6]))
    assert np.all(np.diff(beyond) > 0)  # no tie at the floor 1/101
    assert beyond[1] == pytest.approx(np.log(101) + 1 / 9.9)
    score, who = rarest([cal, cal * 10], [np.array([1.0, 500.0]), np.array([990.0, 10.0])])
    assert list(who) == [1, 0] and score[0] == pytest.approx(rarity(cal * 10, np.array([990.0]))[0])
