"""Ablation proofs on packaged real models (an encoder and a RoPE GQA decoder)."""

import pytest
import torch

from headlab.ablation import ablated, output_projections, record_head_inputs
from headlab.ablation.importance import ImportanceResult
from headlab.ablation.prune import PruneResult
from headlab.ablation.result import AblateResult

from ..support import assert_round_trip
from .conftest import SLASH_TEXTS, named

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name,layer,head", [("minilm-l6", 3, 5), ("smollm2-135m", 11, 6)])
def test_real_model_ablation_is_exact_and_leaves_no_hooks(name, layer, head):
    lm = named(name)
    f = lm.facts
    enc = lm.tokenizer(SLASH_TEXTS[:2], return_tensors="pt", padding=True)
    proj = output_projections(lm.model, f.n_layers)[layer]
    d = proj.weight.shape[1] // f.n_heads
    outs, rec = [], {}
    hook = proj.register_forward_hook(lambda m, a, o: outs.append(o.detach().clone()))
    try:
        with torch.inference_mode():
            with record_head_inputs(lm.model, f.n_layers, f.n_heads, rec):
                plain = lm.model(**enc).last_hidden_state
            with ablated(lm.model, f.n_layers, f.n_heads, {}):
                assert torch.equal(lm.model(**enc).last_hidden_state, plain)
            with ablated(lm.model, f.n_layers, f.n_heads, {layer: [head]}):
                knocked = lm.model(**enc).last_hidden_state
    finally:
        hook.remove()
    with torch.no_grad():
        term = rec[layer][:, :, head].clone() @ proj.weight[:, head * d:(head + 1) * d].T
    torch.testing.assert_close(outs[2], outs[0] - term, atol=1e-4, rtol=1e-5)
    assert (knocked - plain).abs().max() > 0
    assert not any(m._forward_pre_hooks for m in lm.model.modules())


def test_ablate_experiment_report_on_an_encoder(tmp_path):
    import json

    from headlab.cli import main

    rc = main(["ablate", "minilm-l6", "--heads", "0.2,3.1", "--draws", "3", "--samples", "8", "--no-progress",
               "--out", str(tmp_path)])
    assert rc == 0
    r = json.loads((tmp_path / "ablate.json").read_text())
    assert_round_trip(AblateResult, tmp_path / "ablate.json")
    assert r["heads"] == ["0.2", "3.1"] and r["metric"] == "cosine_distance"
    assert {"base", "ablated", "delta"} <= set(r["scored"]["cosine_distance"])
    c = r["control"]
    assert c["draws"] == 3 and 1 / 4 <= c["p_value"] <= 1 and c["interval"][0] <= c["interval"][1]
    # the p-value again from the file alone: each control set's change against the target's
    assert len(c["per_set"]) == 3 and c["delta_mean"] == pytest.approx(sum(c["per_set"]) / 3)
    assert c["p_value"] == (1 + sum(x >= c["delta_target"] for x in c["per_set"])) / 4
    assert r["scored"]["cosine_distance"]["delta"] > 0  # removing heads moves the hidden states
    pooled = r["scored"]["pooled_cosine_distance"]
    assert 0 < pooled["delta"] < 1 and pooled["control_delta_mean"] > 0
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Ablation — minilm-l6" in md and "| cosine_distance |" in md
    # the report opens with what it found: the ablation against its matched random heads, with its p
    short = md.split("## In short", 1)[1].split("\n## ", 1)[0]
    assert "**Ablation — minilm-l6**: ablating" in short and f"p = {c['p_value']:.3f}" in short


def test_ablate_resample_mode_and_stimulus_suites(tmp_path):
    import json

    from headlab.cli import main

    rc = main(["ablate", "minilm-l6", "--heads", "2.3", "--mode", "resample", "--draws", "2", "--samples", "8",
               "--suites", "slash,controls", "--suite-n", "6", "--no-progress", "--out", str(tmp_path)])
    assert rc == 0
    r = json.loads((tmp_path / "ablate.json").read_text())
    assert_round_trip(AblateResult, tmp_path / "ablate.json")
    assert r["mode"] == "resample" and set(r["suites"]) == {"slash", "controls"}
    for suite in r["suites"].values():
        assert suite["n_items"] >= 6
        assert suite["near"]["cosine_distance"]["delta"] > 0 and suite["away"]["cosine_distance"]["delta"] > 0
    assert main(["ablate", "minilm-l6", "--heads", "2.3", "--suites", "nope", "--no-progress",
                 "--out", str(tmp_path)]) == 2
    assert main(["ablate", "minilm-l6", "--heads", "9.0", "--no-progress", "--out", str(tmp_path)]) == 2


def test_ablate_scores_the_positions_asked_for(tmp_path):
    """--positions repeat on smollm2's induction head 18.6: the second copy of repeated random tokens gets much
    harder with the head gone, against matched random heads, and the first copy (nothing to copy) does not;
    --positions all on any text scores every token and leaves no rest."""
    import json

    from headlab.cli import main

    assert main(["ablate", "smollm2-135m", "--heads", "18.6", "--positions", "repeat", "--draws", "2", "--samples",
                 "8", "--window", "48", "--no-progress", "--out", str(tmp_path / "rep")]) == 0
    r = AblateResult.read(tmp_path / "rep")
    assert_round_trip(AblateResult, tmp_path / "rep" / "ablate.json")
    second, first = r.scored["loss"], r.rest["loss"]
    assert second["base"] < first["base"] - 5  # the copy is predictable, random tokens are not
    assert second["delta"] > 0.5 and r.control["difference"] > 0.3 and r.control["interval"][0] > 0
    assert r.rest_control is not None and abs(first["delta"]) < 0.1 and r.suites == {}
    assert r.part_names() == ("second copy", "first copy")
    assert main(["ablate", "minilm-l6", "--heads", "0.1", "--positions", "all", "--draws", "6", "--samples", "6",
                 "--stop-after", "1", "--corpus", "pydoc", "--no-progress", "--out", str(tmp_path / "all")]) == 0
    a = json.loads((tmp_path / "all" / "ablate.json").read_text())
    c = a["control"]  # stopped at the first random set that reached the target's change, or ran every draw
    assert c["sequential"]["stopped"] == (c["per_set"][-1] >= c["delta_target"]) and len(c["per_set"]) == c["draws"]
    assert sum(x >= c["delta_target"] for x in c["per_set"]) == (1 if c["sequential"]["stopped"] else 0)
    assert a["positions"] == "all" and a["rest"] == {} and a["rest_control"] is None
    assert a["scored_definition"] == "every token" and a["scored"]["cosine_distance"]["delta"] > 0
    assert main(["report", str(tmp_path / "all"), "--out", str(tmp_path / "report")]) == 0


def test_importance_cli_on_an_encoder(tmp_path):
    import json

    from headlab.cli import main

    assert main(["importance", "minilm-l6", "--samples", "8", "--no-progress", "--out", str(tmp_path)]) == 0
    r = json.loads((tmp_path / "importance.json").read_text())
    assert_round_trip(ImportanceResult, tmp_path / "importance.json")
    assert len(r["heads"]) == 72 and r["spearman_exact_vs_gradient"] is None
    assert all(h["exact_delta"] > 0 for h in r["heads"])  # every head moves the final states a little
    assert (tmp_path / "importance.md").read_text() == ImportanceResult.read(tmp_path).markdown()
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "report")]) == 0  # the report's section
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Head importance — minilm-l6" in md and any((tmp_path / "report" / "figures").glob("*importance.png"))


def test_prune_curves_start_at_zero_and_end_equal(tmp_path):
    import json

    from headlab.cli import main

    assert main(["prune", "minilm-l6", "--keep", "0.2", "--samples", "8", "--no-progress", "--out", str(tmp_path)]) == 0
    r = json.loads((tmp_path / "prune.json").read_text())
    assert_round_trip(PruneResult, tmp_path / "prune.json")
    c = r["curves"]
    assert set(c) == {"exact", "random", "exact-keep-specialized"} and r["fractions"][-1] == 1.0
    assert abs(c["exact"][0]) < 1e-6 and c["exact"][-1] == c["random"][-1] > 0  # all heads gone: same model
    assert c["exact-keep-specialized"][-1] is None  # one head is kept, so 100% is unreachable
    assert c["exact"][1] <= c["random"][1]  # removing the least important 10% hurts less than random
    assert (tmp_path / "prune.png").read_bytes()[:4] == b"\x89PNG"
    md = (tmp_path / "prune.md").read_text()
    assert md == PruneResult.read(tmp_path).markdown() and "| 100% | " in md
    assert "Kept in exact-keep-specialized: 0.2" in md
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Pruning — minilm-l6" in md and "exact-keep-specialized" in md
