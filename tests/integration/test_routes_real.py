"""Capture routes on the packaged pretrained models: fused and chunked equal eager, and a real 8k-token scan."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from headlab import scan
from headlab.cli import main
from headlab.models import NAMED_MODELS

from ..support import need
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
    # 16 batches of one: enough of the first shape to repay timing it
    rc = main(["scan", "minilm-l6", "--max-samples", "16", "--batch-size", "1", "--no-progress", "--out", str(out)])
    assert rc == 0
    settings = json.loads((out / "scan.json").read_text())["settings"]
    assert settings["route"] == "auto" and "fused and eager" in settings["route_reason"]
    assert {c["route"] for c in settings["route_by_shape"].values()} <= {"fused", "eager"}
    assert all(c["why"].startswith("measured") for c in settings["route_by_shape"].values())  # now or before
    rc = main(["scan", "minilm-l6", "--max-samples", "8", "--no-progress", "--detectors", "entropy", "offset",
               "--out", str(tmp_path / "rows")])
    assert rc == 0
    settings = json.loads((tmp_path / "rows" / "scan.json").read_text())["settings"]
    assert settings["route"] == "auto" and "entropy" in settings["route_reason"]
    assert {c["route"] for c in settings["route_by_shape"].values()} <= {"chunked", "eager"}


def _one_window_of(text: str, tokenizer, n_tokens: int) -> str:
    """The longest prefix of ``text`` that is still one window of ``n_tokens``, so exactly one sample is scanned."""
    lo, hi = 0, len(text)
    while hi - lo > 64:
        mid = (lo + hi) // 2
        n = len(tokenizer(text[:mid], add_special_tokens=False)["input_ids"])
        lo, hi = (mid, hi) if n <= n_tokens else (lo, mid)
    return text[:lo]


def _stdtypes() -> str:
    return (PYTHON_DOC[-1] / "library" / "stdtypes.rst.txt").read_text(encoding="utf-8")


def _tiny_smollm2_dir(path: Path) -> Path:
    """A random-init two-layer Llama with smollm2-135m's tokenizer and its 8192-token context."""
    from transformers import LlamaConfig, LlamaForCausalLM

    need("smollm2-135m")
    src = NAMED_MODELS["smollm2-135m"].locate()
    cfg = LlamaConfig(vocab_size=49152, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192)
    LlamaForCausalLM(cfg).save_pretrained(path)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / f, path / f)
    return path


needs_python_doc = pytest.mark.skipif(not PYTHON_DOC and not os.environ.get("CI"),
                                      reason="Debian's python3.11-doc is not installed (make test installs it)")


# The window's mechanics at 8192 tokens (one sample, the fused route, flat memory) do not depend on the
# model's size; a real model's 8192-token cost is bench/long_context.py's, and its heads at long range are
# the 2048-token test below.
@needs_python_doc
def test_an_8192_token_window_of_real_documentation_scans_fused_from_the_cli(tmp_path):
    """About 8k tokens of Python's documentation (library/stdtypes) in one window, fused route, from the CLI."""
    model = _tiny_smollm2_dir(tmp_path / "tiny")
    from headlab import load

    doc = tmp_path / "stdtypes.txt"
    doc.write_text(_one_window_of(_stdtypes(), load(str(model)).tokenizer, 8192), encoding="utf-8")
    out = tmp_path / "long"
    rc = main(["scan", str(model), "--corpus", str(doc), "--max-length", "8192", "--max-samples", "0",
               "--batch-size", "1", "--no-progress", "--out", str(out)])
    assert rc == 0
    j = json.loads((out / "scan.json").read_text())
    assert j["settings"]["route_by_shape"]["1x8192"]["route"] == "fused" and j["settings"]["window"] == 8192
    assert j["n_samples"] == 1 and 8000 <= j["n_tokens"] <= 8192
    assert len(j["heads"]) == 8 and all(0 <= h["scores"]["previous-token"] <= 1 for h in j["heads"])


@needs_python_doc
def test_smollm2_has_previous_token_heads_over_2048_tokens_of_real_documentation(tmp_path):
    lm = named("smollm2-135m")
    doc = tmp_path / "stdtypes.txt"
    doc.write_text(_one_window_of(_stdtypes(), lm.tokenizer, 2048), encoding="utf-8")
    out = tmp_path / "long"
    # one route: auto would time eager and fused on this one window first, three times the scan
    rc = main(["scan", "smollm2-135m", "--corpus", str(doc), "--max-length", "2048", "--max-samples", "0",
               "--batch-size", "1", "--route", "fused", "--no-progress", "--out", str(out)])
    assert rc == 0
    j = json.loads((out / "scan.json").read_text())
    assert j["n_samples"] == 1 and 2000 <= j["n_tokens"] <= 2048
    prev = [h["scores"]["previous-token"] for h in j["heads"]]
    assert all(0 <= p <= 1 for p in prev) and max(prev) > 0.3  # real previous-token heads at long range
