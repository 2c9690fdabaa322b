"""The three-stage test: segment counts by BIC against log step, checked against a naive loop and on
trajectories whose stages are known."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from headlab.formation.stages import best_split, segments, stage_statistics
from headlab.formation.tracking import TrackResult
from headlab.rulebook import BOOK

STEPS = np.unique(np.round(np.logspace(1, np.log10(300_000), 48)).astype(int))  # log-spaced, as a long run


def _stages(rng: np.random.Generator, noise: float = 0.01) -> np.ndarray:
    """Noise until 10k steps, a rise to 100k, stable after (the document's shape)."""
    x = np.log10(STEPS)
    y = np.clip((x - 4) / (5 - 4), 0, 1) * 0.7 + 0.05
    return y + rng.normal(0, noise, len(x))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_the_best_split_is_the_naive_loops(k: int) -> None:
    rng = np.random.default_rng(k)
    x, y = np.sort(rng.random(11)), rng.random(11)

    def naive_sse(a: np.ndarray, b: np.ndarray) -> float:
        return float(((np.polyval(np.polyfit(a, b, 1), a) - b) ** 2).sum()) if len(a) > 2 else 0.0

    best = min((sum(naive_sse(x[a:b], y[a:b]) for a, b in zip((0, *c), (*c, 11))), c)
               for c in combinations(range(2, 10), k - 1)
               if all(b - a >= 2 for a, b in zip((0, *c), (*c, 11))))
    got = best_split(x, y, k)
    assert got[1] == best[1] and got[0] == pytest.approx(best[0], abs=1e-9)


def test_a_three_stage_trajectory_gets_three_segments_at_its_boundaries() -> None:
    fit = segments(STEPS, _stages(np.random.default_rng(0)))
    assert fit.k == 3
    first, second = fit.boundaries
    assert 10_000 / 1.5 <= first <= 10_000 * 1.5 and 100_000 / 1.5 <= second <= 100_000 * 1.5


def test_straight_lines_and_pure_noise_are_rarely_split_and_the_documents_shape_always_is() -> None:
    """The false-split rate (more than one segment where there is one) under 5% over 40 straight lines and 40
    noise series; the document's shape at three times the noise keeps its three segments every time."""
    x = np.log10(STEPS)
    lines = [segments(STEPS, 0.1 * x + np.random.default_rng(s).normal(0, 0.01, len(x))).k for s in range(40)]
    noise = [segments(STEPS, np.random.default_rng(s).normal(0.3, 0.02, len(x))).k for s in range(40)]
    assert sum(k > 1 for k in lines + noise) < 0.05 * 80
    assert all(segments(STEPS, _stages(np.random.default_rng(s), 0.03)).k == 3 for s in range(20))


def test_the_statistics_feed_the_declared_rule() -> None:
    rng = np.random.default_rng(2)
    scores = np.full((len(STEPS), 1, 3), 0.02)
    scores[:, 0, 0], scores[:, 0, 1] = _stages(rng), _stages(rng)  # specialize (above 0.4), three stages
    scores[:, 0, 2] += rng.normal(0, 0.01, len(STEPS))  # never specializes: not counted
    tracks = [TrackResult(run=f"s{i}", steps=[int(s) for s in STEPS], n_layers=1, n_heads=3,
                          scores={"previous-token": scores}) for i in range(3)]
    stats = stage_statistics(tracks, "previous-token")
    assert stats["heads"] == 6 and stats["three"] == 6 and stats["by_k"] == {1: 0, 2: 0, 3: 6}
    assert stats["null_heads"] == 3 and stats["null_three"] == 0  # the head that never specializes, per run
    assert stats["formed"] == 3 and stats["target"] == "previous-token"
    judged = BOOK["formation.stages"].judge(stats)
    assert judged.verdict.value == "supported", judged  # 3 seeds of 300k steps, boundaries near 10k and 100k
    assert BOOK["formation.stages"].judge({**stats, "steps": 3000}).verdict.value == "inconclusive"


def test_the_slash_gradient_share_is_fitted_at_log_spaced_signal_steps() -> None:
    from headlab.formation.stages import gradient_stage_statistics, thinned

    steps = list(range(50, 300_001, 50))  # signals every 50 steps, as a long run logs them
    keep = thinned(steps)
    assert 30 <= len(keep) <= 48 and steps[keep[0]] == 50 and steps[keep[-1]] == 300_000
    x = np.log10(steps)
    rng = np.random.default_rng(3)
    share = np.clip(x - 4, 0, 1)[:, None, None] * 0.6 + 0.1 + rng.normal(0, 0.01, (len(steps), 1, 2))
    sig = {"logit_slash": share, "logit_other": 1 - share}
    track = TrackResult(run="s", steps=[50, 300_000], n_layers=1, n_heads=2,
                        scores={"slash_mass": np.array([[[0.1, 0.1]], [[0.9, 0.9]]])})  # both heads specialize
    stats = gradient_stage_statistics([(steps, sig)] * 3, [track] * 3, "slash_mass")
    assert stats["heads"] == 6 and stats["three"] == 6 and stats["steps"] == 300_000 and stats["null_heads"] == 0
    first, second = stats["boundaries"]
    assert 10_000 / 1.5 <= first <= 10_000 * 1.5 and 100_000 / 1.5 <= second <= 100_000 * 1.5


def test_formation_claims_read_tracked_run_folders_and_judge_each_claim(tmp_path) -> None:
    import json

    from headlab.formation.claims import FormationClaimsResult, formation_claims

    rng = np.random.default_rng(4)
    steps = [int(s) for s in STEPS]
    runs = []
    for seed in range(3):
        run = tmp_path / f"s{seed}"
        scores = np.full((len(steps), 1, 3), 0.02) + rng.normal(0, 0.005, (len(steps), 1, 3))
        scores[:, 0, 0], scores[:, 0, 1] = _stages(rng), _stages(rng)
        TrackResult(run=run.name, steps=steps, n_layers=1, n_heads=3, scores={"slash_mass": scores}).write(
            run / "track")
        share = np.clip(np.log10(STEPS) - 4, 0, 1)[:, None, None] * 0.6 + 0.1 + rng.normal(0, 0.01, (len(steps), 1, 3))
        share[:, 0, 2] = 0.1 + rng.normal(0, 0.01, len(steps))  # the head that never specializes: the null
        (run / "signals.jsonl").write_text("".join(json.dumps({"step": s, "signals": {
            "logit_slash": share[i].tolist(), "logit_other": (1 - share[i]).tolist()}}) + "\n"
            for i, s in enumerate(steps)))
        (run / "config.toml").write_text(f"[optim]\nsteps = {steps[-1]}\n")
        runs.append(run)
    r = formation_claims(runs, draws=200)
    verdicts = {row["claim"]: row["verdict"] for row in r.rows}
    assert verdicts["three stages (specialized heads' scores)"] == "supported"  # 6 of 6 heads, near 10k / 100k
    assert verdicts["three stages (slash-gradient share)"] == "supported"
    assert verdicts["initialization"] == "not measured"
    assert verdicts["early prediction"] in ("supported", "not supported", "inconclusive")  # measured, not assumed
    r.write(tmp_path / "claims")
    assert FormationClaimsResult.read(tmp_path / "claims").rows == json.loads(json.dumps(r.rows))
    assert "| initialization | `formation.init` | not measured |" in r.markdown()
    assert (tmp_path / "claims" / "formation_claims.md").read_text() == r.markdown()
    assert "| first | early model | early score alone | layer index | score and layer | random |" in r.markdown()
    from headlab.formation.claims import specialized_counts

    assert specialized_counts(runs) == [2, 2, 2]  # heads 0.0 and 0.1 of every run; 0.2 never specializes
    sink = formation_claims(runs, metric="slash_mass", draws=50)
    assert all("of slash_mass heads" not in row["claim"] for row in sink.rows)
    arms = formation_claims(runs, draws=50, init_arms=(specialized_counts(runs), [0])).rows[-1]
    assert arms["verdict"] == "inconclusive"  # one run of the other arm: below the rule's minimum of seeds


@pytest.mark.parametrize(("total", "words"), [(5_000, "ends before the first"),
                                              (50_000, "passes the first boundary only"),
                                              (100_000, "ends at the second boundary"), (200_000, "passes both")])
def test_a_track_report_says_how_far_the_run_gets_through_the_stage_boundaries(total, words) -> None:
    from headlab.formation.track_report import _reach

    assert words in _reach(total)


def test_every_committed_long_run_report_is_what_its_committed_scores_render(tmp_path) -> None:
    """Each tracked run of the long study (its phases.json and track.md) is what headlab's report code gives from
    the scores, config and gradient signals committed beside it: no report carries an older wording."""
    from headlab.formation.track_report import write_track_text

    root = Path(__file__).resolve().parents[2] / "results" / "formation" / "long"
    runs = sorted(t.parent for t in root.rglob("track") if (t / "track.json").is_file())
    assert len(runs) >= 4
    for run in runs:
        out = tmp_path / run.relative_to(root)
        write_track_text(TrackResult.read(run / "track"), run, out)
        # the fits' last bits differ between CPUs (seen: one digit in the 17th place), so the JSON is compared to
        # 12 significant digits, the rendered report to the letter
        assert _digits(_content(out / "phases.json")) == _digits(_content(run / "track" / "phases.json")), run
        assert (out / "track.md").read_text() == (run / "track" / "track.md").read_text(), run


def _content(path: Path) -> Any:
    from headlab.io import SEAL

    return {k: v for k, v in json.loads(path.read_text()).items() if k != SEAL}


def _digits(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.12g}")
    if isinstance(x, dict):
        return {k: _digits(v) for k, v in x.items()}
    return [_digits(v) for v in x] if isinstance(x, list) else x


def test_track_text_refuses_a_folder_that_was_not_tracked(tmp_path) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "bench" / "studies" / "track_text.py"
    got = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True)
    assert got.returncode == 2 and got.stderr.count("\n") == 1 and str(tmp_path) in got.stderr


def test_a_records_gzipped_signals_read_as_the_run_logged_them(tmp_path) -> None:
    """Committed records keep signals.jsonl gzipped; read_signals gives the same steps and arrays either way."""
    import gzip
    import json

    import numpy as np

    from headlab.formation.tracking import read_signals

    rows = "".join(json.dumps({"step": s, "signals": {"w_q": [[s * 0.5, 1.0]]}}) + "\n" for s in (1, 50, 100))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "signals.jsonl").write_text(rows)
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "signals.jsonl.gz").write_bytes(gzip.compress(rows.encode()))
    (a_steps, a), (b_steps, b) = read_signals(tmp_path / "run"), read_signals(tmp_path / "rec")
    assert a_steps == b_steps == [1, 50, 100] and np.array_equal(a["w_q"], b["w_q"]) and a["w_q"].shape == (3, 1, 2)
