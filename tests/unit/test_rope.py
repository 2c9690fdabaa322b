"""RoPE analysis on a tiny GQA Llama: streamed Gram statistics equal a direct SVD of the pre-RoPE q/k."""

import json

import numpy as np
import torch

from headlab.study.rope import _bands, _rank1, capture_qk, rope_analysis

from ..support import random_samples as _samples
from .tiny import Slash, tiny


def test_rank1_and_bands_on_known_matrices():
    v = np.array([3.0, 0, 0, 0, 4.0, 0, 0, 0])  # energy only in pair 0 (dims 0 and 4): the highest band
    g = np.outer(v, v)[None]
    assert _rank1(g)[0] == np.float64(1.0)
    np.testing.assert_allclose(_bands(g)[0], [1.0, 0.0, 0.0])
    iso = np.eye(8)[None]
    assert abs(_rank1(iso)[0] - 1 / 8) < 1e-12


def test_streamed_statistics_match_a_direct_svd():
    lm = tiny("llama")
    Slash(lm)
    samples = _samples(6)
    f = lm.facts
    res = rope_analysis(lm, n=6, seed=0, natural=samples, randoms=samples[:2], batch_size=4, max_offset=3)
    # direct: run each sample alone, collect pre-RoPE q of layer 1, head 2
    qs = []
    with torch.inference_mode(), capture_qk(lm.model, f.head_dim,
                                             lambda l, k, x: qs.append(x[0, :, 2]) if (l, k) == (1, "q") else None):
        for s in samples:
            lm.model(input_ids=torch.tensor([s.input_ids]))
    Q = torch.cat(qs).double().numpy()
    sv = np.linalg.svd(Q, compute_uv=False) ** 2
    assert abs(res.rank1_q[1, 2] - sv[0] / sv.sum()) < 1e-6
    assert res.slash_natural.shape == (f.n_layers, f.n_heads, 4) and res.rank1_k.shape == (f.n_layers, 2)
    np.testing.assert_allclose(res.bands_q.sum(-1), 1.0, atol=1e-9)
    assert not any(m._forward_hooks for m in lm.model.modules())
    from headlab.io import _clean
    from headlab.study.rope import rope_from_json

    j = json.loads(json.dumps(_clean(res.to_json())))  # what rope.json holds; it reads back to the same record
    assert _clean(rope_from_json(j).to_json()) == j
