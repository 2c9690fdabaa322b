"""The cross-model study's parts: a training run loads as a model, claims on a chosen corpus, scale, languages."""

import json

import numpy as np
import pytest
import torch

from headlab import load
from headlab.census.result import ScanResult
from headlab.cli import main
from headlab.errors import HeadlabError
from headlab.formation.track_report import THRESHOLDS
from headlab.formation.training_run import tracked_training
from headlab.models.loader import check_source
from headlab.study.scale import KINDS, ScaleResult, scale
from headlab.training import from_dict
from headlab.training.run_model import load_checkpoint_model

from ..support import TINY_RUN
from .conftest import PLAIN_TEXTS, SLASH_TEXTS, named

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    raw = json.loads(json.dumps(TINY_RUN))
    raw["model"]["max_length"] = 128  # the packaged models' scan window, so that the scans compare
    folder = tmp_path_factory.mktemp("run")
    tracked_training(from_dict(raw), folder, progress=False, device="cpu")
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    f = tmp_path_factory.mktemp("corpus") / "texts.txt"
    f.write_text("\n\n".join((SLASH_TEXTS + PLAIN_TEXTS) * 12))
    return f


def test_a_training_run_loads_by_its_folder_with_its_final_weights(run, tmp_path):
    lm = load(run)
    ref = load_checkpoint_model(run, None)
    assert lm.facts.causal and lm.name == str(run)
    for (k, a), (_, b) in zip(lm.model.state_dict().items(), ref.model.state_dict().items()):
        assert torch.equal(a, b), k
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "config.toml").write_text((run / "config.toml").read_text())
    with pytest.raises(HeadlabError, match="has no final.safetensors"):
        check_source(unfinished)


def test_claims_on_a_chosen_corpus_then_scale_against_a_naive_count(run, corpus, tmp_path):
    named("minilm-l6")  # skips when its package is not installed
    out = tmp_path / "claims"
    rc = main(["claims", "minilm-l6", str(run), "--corpus", str(corpus), "--filter", "with-target", "--n", "2",
               "--scan-samples", "6", "--no-progress", "--out", str(out)])
    assert rc == 0
    md = (out / "claims.md").read_text()
    assert f"Scans: up to 6 windows per model from {corpus}, only windows with-target." in md
    for folder in ("minilm-l6", run.name):
        sc = ScanResult.read(out / folder / "scan.json")
        assert sc.n_samples == sc.n_samples_with_target == 6  # the filter kept only windows with '/'
    result = scale([out], tmp_path / "scale")
    assert ScaleResult.read(tmp_path / "scale").points == result.points  # read back from its folder
    points = result.scale_points()
    assert [p.model for p in points] == [run.name, "minilm-l6"]  # sorted by parameters
    assert [p.kind for p in points] == ["decoder", "encoder"]
    for p, folder in zip(points, (run.name, "minilm-l6")):
        sc = ScanResult.read(out / folder / "scan.json")
        heads = [h["scores"] for h in sc.heads()]
        for kind, (det, key) in KINDS.items():
            naive = sum(1 for s in heads if s[det] >= THRESHOLDS[key]) / len(heads)  # a score is named by its detector
            assert p.shares[kind] == pytest.approx(naive), (folder, kind)
        assert p.max_slash_mass == pytest.approx(max(s["token"] for s in heads))
        assert p.top_slash_score == pytest.approx(max(s["offset"] for s in heads))
        assert p.shares["/"] == pytest.approx(np.mean([s["token_max_run"] >= 3 for s in heads]))
    assert (tmp_path / "scale" / "scale.png").read_bytes()[:4] == b"\x89PNG"
    assert "| minilm-l6 | encoder |" in (tmp_path / "scale" / "scale.md").read_text()
    other = tmp_path / "other"
    main(["scan", "minilm-l6", "--corpus", str(corpus), "--max-samples", "4", "--no-progress", "--out", str(other)])
    with pytest.raises(HeadlabError, match="scanned with other filter, max_samples than"):
        scale([out / "minilm-l6", other], tmp_path / "mixed")
    assert main(["scale", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")]) == 2


def test_languages_against_a_naive_loop_over_the_marked_masses(tmp_path):
    from headlab.probes.suites import slash
    from headlab.study.characterize import marked_mass
    from headlab.study.languages import LanguagesResult, LanguagesSettings, by_language

    lm = named("minilm-l6")
    r = by_language(lm, LanguagesSettings(languages=("en", "de", "ja"), n=8), device="cpu")
    assert [row.language for row in r.rows] == ["en", "de", "ja"] and r.settings["reference"] == "en"
    ref = marked_mass(lm, slash(8, 0, ["en"]), 8).mean(0)  # (L, H)
    H = ref.shape[1]
    flat_ref = sorted(((float(v), f"{i // H}.{i % H}") for i, v in enumerate(ref.ravel())), reverse=True)
    for row in r.rows:
        m = marked_mass(lm, slash(8, 0, [row.language]), 8)  # (N, L, H)
        mean = m.mean(0)
        ranked = sorted(((float(v), f"{i // H}.{i % H}") for i, v in enumerate(mean.ravel())), reverse=True)
        assert [(h, pytest.approx(v)) for v, h in ranked[:3]] == [(h, v) for h, v, _, _ in row.top]
        assert all(lo <= v <= hi for _, v, lo, hi in row.top)
        ref_head = flat_ref[0][1]
        assert row.reference_top_rank == 1 + [h for _, h in ranked].index(ref_head)
        naive = []
        for layer in range(m.shape[1]):
            for h in range(H):
                run = best = 0
                for x in m[:, layer, h]:
                    run = run + 1 if x > 0.5 else 0
                    best = max(best, run)
                if best >= 3:
                    naive.append(f"{layer}.{h}")
        assert row.sdh == naive
    assert r.rows[0].spearman == pytest.approx(1.0)
    assert LanguagesResult.from_json(json.loads(json.dumps(r.to_json()))).to_json() == r.to_json()
    assert main(["languages", "minilm-l6", "--languages", "en", "fr", "--n", "4", "--out", str(tmp_path / "l")]) == 0
    assert "## minilm-l6" in (tmp_path / "l" / "languages.md").read_text()
    assert (tmp_path / "l" / "minilm-l6" / "languages.json").exists()


def test_claims_resume_reuses_the_saved_parts_made_with_the_same_settings(corpus, tmp_path, monkeypatch):
    import headlab.study.claims as claims_mod

    lm = named("minilm-l6")
    st = claims_mod.ClaimsSettings(n=2, scan_samples=4, corpus=[str(corpus)])
    opts = dict(progress=False, device="cpu", out=tmp_path)
    first = claims_mod.claims([lm], st, **opts)

    def no_rescan(*a, **k):
        raise AssertionError("rescanned")

    monkeypatch.setattr(claims_mod, "scan", no_rescan)
    monkeypatch.setattr(claims_mod, "characterize", no_rescan)
    again = claims_mod.claims([lm], st, resume=True, **opts)
    assert again.to_json() == first.to_json()
    with pytest.raises(AssertionError, match="rescanned"):  # other settings: measured again, not reused
        claims_mod.claims([lm], st.replace(scan_samples=5), resume=True, **opts)
