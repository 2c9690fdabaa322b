"""Capture routes on the packaged pretrained models: fused and chunked equal eager, and a real 8k-token scan."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from headlab import scan
from headlab.cli import main

from .conftest import PLAIN_TEXTS, SLASH_TEXTS, named

pytestmark = pytest.mark.integration

DETECTORS = ["token", "offset", "previous-token", "duplicate-token", "induction", "sink", "entropy"]
PYTHON_DOC = sorted(Path("/usr/share/doc").glob("python3*/html/_sources"))


def _means(lm, texts, route, batch_size, max_length=128):
    dets = [d for d in DETECTORS if route != "fused" or d != "entropy"]
    r = scan(lm, texts, detectors=dets, route=route, batch_size=batch_size, max_length=max_length,
             max_samples=None, progress=False)
    assert r.settings["route"] == route
    return r.means


# gemma3-270m at 700 tokens runs once, batched (its unbatched, unpadded case is tests/unit/test_routes.py's
# tiny gemma3 with the same sliding-window layers, in a second rather than a minute)
@pytest.mark.parametrize("name,batch_size", [("minilm-l6", 1), ("minilm-l6", 8), ("smollm2-135m", 1),
                                             ("smollm2-135m", 8), ("gemma3-270m", 2)])
def test_routes_agree_on_real_models(name, batch_size):
    lm = named(name)
    texts = SLASH_TEXTS * 2 + PLAIN_TEXTS
    max_length = 128
    if name == "gemma3-270m":  # beyond its 512-token sliding window, so local layers are really windowed
        texts = [" ".join(SLASH_TEXTS * 12), *SLASH_TEXTS]
        max_length = 700
        # a batch of 2 already pads a short text to the long one's 700 tokens: the padded case at 40% of the
        # cost of a batch of all five
    ref = _means(lm, texts, "eager", batch_size, max_length)
    for route in ("fused", "chunked"):
        got = _means(lm, texts, route, batch_size, max_length)
        for k, v in got.items():
            np.testing.assert_allclose(v, ref[k], atol=1e-5, rtol=0, equal_nan=True, err_msg=f"{route} {k}")


def test_auto_route_is_timed_and_recorded(tmp_path):
    out = tmp_path / "scan"
    rc = main(["scan", "minilm-l6", "--max-samples", "8", "--no-progress", "--out", str(out)])
    assert rc == 0
    settings = json.loads((out / "scan.json").read_text())["settings"]
    assert settings["route"] == "auto" and "fused and eager" in settings["route_reason"]
    assert {c["route"] for c in settings["route_by_shape"].values()} <= {"fused", "eager"}
    rc = main(["scan", "minilm-l6", "--max-samples", "8", "--no-progress", "--detectors", "entropy", "offset",
               "--out", str(tmp_path / "rows")])
    assert rc == 0
    settings = json.loads((tmp_path / "rows" / "scan.json").read_text())["settings"]
    assert settings["route"] == "auto" and "entropy" in settings["route_reason"]
    assert {c["route"] for c in settings["route_by_shape"].values()} <= {"chunked", "eager"}


@pytest.mark.skipif(not PYTHON_DOC and not os.environ.get("CI"),
                    reason="Debian's python3.11-doc is not installed (make test installs it)")
def test_smollm2_scan_at_8192_tokens_of_real_documentation(tmp_path):
    """About 8k tokens of Python's documentation (library/stdtypes) in one window, fused route, from the CLI."""
    lm = named("smollm2-135m")
    text = (PYTHON_DOC[-1] / "library" / "stdtypes.rst.txt").read_text(encoding="utf-8")
    lo, hi = 0, len(text)  # the longest prefix that is still one window, so exactly one sample is scanned
    while hi - lo > 64:
        mid = (lo + hi) // 2
        n = len(lm.tokenizer(text[:mid], add_special_tokens=False)["input_ids"])
        lo, hi = (mid, hi) if n <= 8192 else (lo, mid)
    doc = tmp_path / "stdtypes.txt"
    doc.write_text(text[:lo], encoding="utf-8")
    out = tmp_path / "long"
    rc = main(["scan", "smollm2-135m", "--corpus", str(doc), "--max-length", "8192", "--max-samples", "0",
               "--batch-size", "1", "--no-progress", "--out", str(out)])
    assert rc == 0
    j = json.loads((out / "scan.json").read_text())
    assert j["settings"]["route_by_shape"]["1x8192"]["route"] == "fused" and j["settings"]["window"] == 8192
    assert j["n_samples"] == 1 and 8000 <= j["n_tokens"] <= 8192
    prev = [h["scores"]["previous-token"] for h in j["heads"]]
    assert all(0 <= p <= 1 for p in prev) and max(prev) > 0.3  # real previous-token heads exist at 8k
