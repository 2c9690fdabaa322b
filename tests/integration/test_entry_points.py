"""Every entry point that scores heads agrees with every other, on the same samples, for every default detector.

The scan (``headlab scan``: the checkpointed stream), probe scoring (``headlab track``, the viewer, the head
monitor of a training run, ``headlab induce``) and the engine called directly must give the same per-head
scores within 1e-6, on an encoder (minilm-l6), a decoder (smollm2-135m) and a headlab.nn decoder; the sink
score is also checked against its definition computed from ``output_attentions`` (position 0 and the tokenizer's
[SEP]/[CLS]/BOS/EOS keys), so a census path that forgot to bind a detector fails here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from headlab.corpus import Sample
from headlab.detectors import DEFAULT_DETECTORS, make
from headlab.probes.scoring import PROBE_BATCH, mean_scores, sample_scores, score_probes

from .conftest import PLAIN_TEXTS, SLASH_TEXTS, named

TEXTS = SLASH_TEXTS + PLAIN_TEXTS
# float32 attention from two routes (the scan's fused one, eager output_attentions) summed over keys: measured up to
# 2.6e-6 apart in smollm2-135m's layers 12-13 on an AVX-512 machine (either thread count), within 1e-6 on another
TOL = 5e-6


def _nn_decoder():
    from headlab.nn import ModelConfig, Transformer, as_loaded, train_bpe

    tok = train_bpe(TEXTS * 4, 300)
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=len(tok), n_layers=2, n_heads=4, d_model=32, max_length=64))
    return as_loaded(model, tok, "nn-decoder")


def _model(name: str):
    return _nn_decoder() if name == "nn-decoder" else named(name)


def _scanned(lm, tmp: Path):
    """The scan's result and its per-sample rows as samples (the windows the scan drew, in its order)."""
    import pyarrow.parquet as pq

    from headlab import scan

    # the probes' batch size: the same batches, so float32 reductions over padding agree (batch invariance is
    # tested in tests/unit/test_engine.py)
    r = scan(lm, TEXTS, detectors=list(DEFAULT_DETECTORS), max_samples=None, max_length=48, batch_size=PROBE_BATCH,
             per_sample=tmp / "rows.parquet", progress=False)
    rows = pq.read_table(tmp / "rows.parquet").to_pandas()
    samples = [Sample(i, "probe", 0, tuple(int(x) for x in ids)) for i, ids in enumerate(rows["ids"])]
    return r, rows, samples


def _close(a: np.ndarray, b: np.ndarray, what: str) -> None:
    assert a.shape == b.shape, what
    np.testing.assert_allclose(a, b, atol=TOL, rtol=0, equal_nan=True, err_msg=what)


MODELS = [pytest.param("minilm-l6", marks=pytest.mark.integration),
          pytest.param("smollm2-135m", marks=pytest.mark.integration), "nn-decoder"]


@pytest.mark.parametrize("name", MODELS)
def test_every_entry_point_gives_the_scans_scores(name: str, tmp_path: Path) -> None:
    from headlab.formation.tracking import score_model
    from headlab.formation.view import SHOWN_METRICS, shown_scores
    from headlab.views.data import ViewSample

    lm = _model(name)
    r, rows, samples = _scanned(lm, tmp_path)
    assert len(samples) == r.n_samples >= len(TEXTS)
    seps = r.settings["detectors"]["sink"]["separator_ids"]
    tok = lm.tokenizer
    expected = sorted({int(i) for i in (tok.sep_token_id, tok.cls_token_id, tok.bos_token_id, tok.eos_token_id)
                       if i is not None})
    assert seps == expected and seps, "the scan's sink must know the tokenizer's special tokens"

    direct = mean_scores(lm, [make(d) for d in DEFAULT_DETECTORS], samples)
    for d in DEFAULT_DETECTORS:
        _close(direct[d], r.means[d], f"engine vs scan: {d}")
    per = sample_scores(lm, [make("sink"), make("token")], samples)
    _close(per["sink"], np.stack([rows[c] for c in _columns("sink", lm)], -1).reshape(per["sink"].shape),
           "per-sample sink: engine vs the scan's Parquet")

    probes = {"natural": samples, "slash": samples, "repeat": samples}
    want = {"slash_mass": r.means["token"], "slash_mass_stimuli": r.means["token"],
            "offset": np.nanmax(r.means["offset"], -1), "previous-token": r.means["previous-token"],
            "induction": r.means["induction"], "sink": r.means["sink"]}
    for m, got in score_model(lm, probes).items():
        if m in want:
            _close(got, want[m], f"track vs scan: {m}")
    shown = [ViewSample(str(i), list(s.input_ids), [], []) for i, s in enumerate(samples)]
    for m, got in shown_scores(lm, shown).items():
        assert m in SHOWN_METRICS
        _close(got, want[m], f"viewer vs scan: {m}")


def _columns(det: str, lm) -> list[str]:
    return [f"{det}/{l}.{h}" for l in range(lm.facts.n_layers) for h in range(lm.facts.n_heads)]


@pytest.mark.parametrize("name", MODELS)
def test_the_scans_sink_is_its_definition(name: str, tmp_path: Path) -> None:
    """Sink from output_attentions: per sample, the mean over real queries of the mass on position 0 and on every
    [SEP]/[CLS]/BOS/EOS key; averaged over samples."""
    lm = _model(name)
    r, _, samples = _scanned(lm, tmp_path)
    tok = lm.tokenizer
    special = {i for i in (tok.sep_token_id, tok.cls_token_id, tok.bos_token_id, tok.eos_token_id) if i is not None}
    per_sample = []
    for s in samples:
        ids = torch.tensor([s.input_ids])
        with torch.inference_mode():
            attn = _attentions(lm, ids)  # L x (1, H, T, T)
        keys = torch.tensor([j == 0 or t in special for j, t in enumerate(s.input_ids)])
        per_sample.append(torch.stack([a[0][..., keys].sum(-1).mean(-1) for a in attn]).numpy())  # (L, H)
    _close(np.mean(per_sample, 0).astype(np.float32), r.means["sink"].astype(np.float32), "sink vs its definition")


def _attentions(lm, ids: torch.Tensor) -> list[torch.Tensor]:
    if lm.facts.model_type == "headlab":
        from headlab.attention.hooks import capture

        got: list[torch.Tensor] = []
        with capture(lm.model, lambda layer, p: got.append(p.float())):
            lm.model(ids)
        return got
    kwargs = {"use_cache": False} if lm.facts.causal else {}
    return [a.float() for a in lm.model(input_ids=ids, output_attentions=True, **kwargs).attentions]


def test_the_training_monitor_and_induce_score_like_the_scan(tmp_path: Path) -> None:
    from headlab.attention.padding import pad_right
    from headlab.formation.head_monitor import HeadMonitor
    from headlab.formation.induce.measure import checkpoint_scores
    from headlab.training.config import MonitorConfig

    lm = _nn_decoder()
    r, _, samples = _scanned(lm, tmp_path)
    ids, mask = pad_right([s.input_ids for s in samples], 0)
    mon = HeadMonitor(tmp_path, MonitorConfig(every=1), ids, mask, lm.tokenizer, 48, True, 0)
    got = mon.measure(lm.model)
    _close(got["slash_mass"], r.means["token"], "head monitor vs scan: slash_mass")
    _close(got["previous-token"], r.means["previous-token"], "head monitor vs scan: previous-token")
    _close(got["sink"], r.means["sink"], "head monitor vs scan: sink")
    _close(got["induction"], score_probes(lm, {"repeat": mon.repeat}, ["induction"])["induction"],
           "head monitor vs probe scoring: induction")
    mass, _, _ = checkpoint_scores(lm, samples)
    _close(mass, r.means["token"], "induce vs scan: slash mass")
