"""headlab characterize on minilm-l6 with a few items (seconds)."""

import json

import numpy as np
import pytest

from headlab.cli import main
from headlab.study.characterize import CharacterizeResult, CharacterizeSettings, characterize

from .conftest import named

pytestmark = pytest.mark.integration


def test_characterize_minilm_shapes_intervals_and_outputs(tmp_path):
    lm = named("minilm-l6")
    r = characterize(lm, CharacterizeSettings(n=4, seed=1, top=5), progress=False, device="cpu",
                     dtype="float32")
    L, H = 6, 12
    assert r.slash_mass["value"].shape == (L, H) and r.position_curve.shape == (23, L, H)
    for t in [r.slash_mass, r.position_cv, *r.specificity.values(), *r.context.values()]:
        lo, hi = t["lo"], t["hi"]
        ok = ~np.isnan(lo)
        assert (lo[ok] <= hi[ok]).all()
    # the marked mass on '/' is a probability mass
    assert ((r.slash_mass["value"] >= 0) & (r.slash_mass["value"] <= 1)).all()
    # top heads are sorted by '/' mass
    top = [r.slash_mass["value"][l, h] for l, h in r.top]
    assert top == sorted(top, reverse=True)
    prof = r.depth_profile()
    assert sum(p["layers"] for p in prof.values()) == L and sum(p["top"] for p in prof.values()) == 5
    r.write(tmp_path)
    j = json.loads((tmp_path / "characterize.json").read_text())
    assert len(j["heads"]) == L * H and set(j["heads"][0]["specificity"]) >= {"-", "|", "pooled"}
    assert "| head |" in (tmp_path / "characterize.md").read_text()
    CharacterizeResult.read(tmp_path / "characterize.json").write(tmp_path / "again")  # JSON round trip
    assert json.loads((tmp_path / "again" / "characterize.json").read_text()) == j
    assert (tmp_path / "again" / "characterize.md").read_text() == (tmp_path / "characterize.md").read_text()


def test_characterize_cli(tmp_path, capsys):
    rc = main(["characterize", "minilm-l6", "--n", "2", "--no-progress", "--out", str(tmp_path)])
    assert rc == 0 and (tmp_path / "characterize.json").exists()
    assert "Characterization of minilm-l6" in capsys.readouterr().out
    assert main(["characterize", "minilm-l6", "--n", "1", "--no-progress", "--out", str(tmp_path)]) == 2


def test_claims_table_on_one_model(tmp_path):
    from headlab.errors import HeadlabError
    from headlab.study.claims import ClaimsSettings, claims

    with pytest.raises(HeadlabError, match="minilm-l6/evaluate.json does not exist"):  # checked before the work
        claims([named("minilm-l6")], ClaimsSettings(n=2, scan_samples=16, monitor_evaluations=str(tmp_path)),
               progress=False, device="cpu")
    (tmp_path / "mon" / "minilm-l6").mkdir(parents=True)
    (tmp_path / "mon" / "minilm-l6" / "evaluate.json").write_text(json.dumps(
        {"kinds": {"paths": {"auroc": {"heads": [0.95, 0.93, 0.97], "characters": [0.8, 0.78, 0.82]},
                             "best_baseline": "characters", "heads_vs_best": [0.15, 0.12, 0.18], "documents": 90,
                             "verdict": "heads better"}}, "baselines": ["characters"], "fresh_documents": 9}))
    r = claims([named("minilm-l6")], ClaimsSettings(n=2, scan_samples=16, monitor_evaluations=str(tmp_path / "mon")),
               progress=False, device="cpu", out=tmp_path)
    r.write(tmp_path)
    md = (tmp_path / "claims.md").read_text()
    assert md.count("\n| ") >= 9 and "15-20%" in md and "Verdicts: the rule book" in md
    assert "| 9. abnormal head activity reveals the input's structure |" in md
    # the kind's verdict by its rule is heads better, and claim 9 is its own family, a claim of every model (an
    # intersection-union test, each model at 0.05): the other claims of the table do not correct it
    row9 = next(line for line in md.splitlines() if line.startswith("| 9."))
    assert row9.endswith(": supported |") and "Holm" not in row9, row9
    assert "`slash.9` 1 (every one must hold" in md
    j = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in j["claims"]] == list(range(1, 11))  # the document's nine and claim 9 as a signal, ours
    assert j["claims"][7]["per_model"]["minilm-l6"]["verdict"] == "n/a"  # an encoder has no accuracy to lose
    assert j["rulebook"] >= 1 and j["claims"][7]["per_model"]["minilm-l6"]["rule"] == "slash.8"
    cross = j["claims"][6]["cross_model"]  # one kind: inconclusive, unless a model lacks SDHs (then not supported)
    assert cross["verdict"] == ("inconclusive" if j["claims"][0]["per_model"]["minilm-l6"]["verdict"] == "supported"
                                else "not supported")
    for c in j["claims"][:6]:
        assert c["per_model"]["minilm-l6"]["verdict"] in ("supported", "not supported", "inconclusive")
    from headlab.reporting import report  # the report finds the scan, the characterization and the table

    rep = report(tmp_path, tmp_path / "report")
    assert rep.sections == ["Scan — minilm-l6", "Characterization — minilm-l6", "Claims table"]
    assert rep.figures == 4 and "| 8. ablating" in (tmp_path / "report" / "report.md").read_text()
    from headlab.study.claims import ClaimsResult

    ClaimsResult.from_json(j).write(tmp_path / "again")  # the JSON round trip gives the same files
    assert json.loads((tmp_path / "again" / "claims.json").read_text()) == j
    assert (tmp_path / "again" / "claims.md").read_text() == md
