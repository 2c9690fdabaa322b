"""The weights' dtype on the paths that load a model themselves: one refusal for a dtype no path supports, and
one head's pattern in bfloat16 within a stated tolerance of float32 (the scan's own bf16 parity:
tests/integration/test_scan_real.py; every route's: tests/unit/test_routes.py)."""

from __future__ import annotations

import numpy as np
import pytest

import headlab
from headlab.errors import HeadlabError

from ..support import need

TEXT = "See https://example.org/a/b for the a/b split, and 3/4 of c/d."


def test_a_pattern_in_bfloat16_is_within_5e_3_of_float32() -> None:
    """Measured 1.3e-3 on minilm-l6 (6 layers); smollm2-135m's 30 layers add up to 2e-2."""
    need("minilm-l6")
    full = np.asarray(headlab.pattern("minilm-l6", TEXT, "0.2"))
    half = headlab.pattern("minilm-l6", TEXT, "0.2", dtype="bfloat16")
    assert np.asarray(half).dtype == np.float32 and np.abs(np.asarray(half) - full).max() < 5e-3


def test_a_dtype_no_path_supports_is_refused_in_the_callers_words() -> None:
    need("minilm-l6")
    with pytest.raises(HeadlabError, match=r"^dtype='float64': choose float32, bfloat16, float16$"):
        headlab.pattern("minilm-l6", TEXT, "0.2", dtype="float64")
    lm = headlab.load("minilm-l6", dtype="bfloat16")
    assert next(lm.model.parameters()).dtype.__repr__() == "torch.bfloat16"
    with pytest.raises(HeadlabError, match="dtype='int8'"):  # a loaded model keeps its dtype; a bad one is still bad
        headlab.pattern(lm, TEXT, "0.2", dtype="int8")
