"""The viewer's 8-bit map codec: bounded error, causal maps keep the lower triangle."""

import numpy as np

from headlab.viewer import dequantize, quantize


def test_quantization_error_is_bounded_and_causal_maps_keep_the_lower_triangle():
    rng = np.random.default_rng(0)
    for causal in (False, True):
        x = rng.random((50, 50)) ** 8
        if causal:
            x = np.tril(x)
        p = x / x.sum(1, keepdims=True)
        back = dequantize(quantize(p, causal, "sqrt"), 50, causal, "sqrt")
        assert np.abs(back - p).max() < 0.004
        assert np.all(back[p == 0] == 0)
        # the sqrt scale's bound: |error| <= sqrt(p)/255 + (0.5/255)^2, so small weights stay small
        assert np.all(np.abs(back - p) <= np.sqrt(p) / 255 + 4e-6)
        lin = dequantize(quantize(p, causal, "linear"), 50, causal, "linear")
        assert np.abs(lin - p).max() <= 0.5 / 255 + 1e-9
    causal_bytes = len(quantize(np.tril(np.ones((64, 64))) / 64, True, "sqrt"))
    assert causal_bytes < len(quantize(np.ones((64, 64)) / 64, False, "sqrt"))
