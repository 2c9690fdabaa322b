"""A model larger than memory: ``load(..., device_map="auto", max_memory=...)`` leaves the layers that do not fit
on the disk (read from the checkpoint when they run), and the census of that model is the in-memory census, score for
score (smollm2-135m with about half of its layers on the disk, on the CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from headlab import load, scan
from headlab.errors import HeadlabError
from tests.support import need

pytestmark = pytest.mark.integration

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _texts() -> list[str]:
    text = (DOCS / "scan.md").read_text()
    return [text[i * 600:(i + 1) * 600] for i in range(6)]


def test_a_scan_with_half_the_layers_on_the_disk_equals_the_in_memory_scan() -> None:
    need("smollm2-135m")
    whole = load("smollm2-135m")
    placed = load("smollm2-135m", device_map="auto", max_memory={"cpu": "250MB"})
    layers = placed.model.hf_device_map
    on_disk = [k for k, v in layers.items() if v == "disk" and ".layers." in f".{k}"]
    assert 0.25 * whole.facts.n_layers <= len(on_disk) <= 0.75 * whole.facts.n_layers, layers
    assert any(p.device.type == "meta" for p in placed.model.parameters())
    a, b = (scan(m, _texts(), max_length=96, progress=False).to_json() for m in (whole, placed))
    _same_scores(a, b)


def _same_scores(a: dict, b: dict) -> None:
    """Two scans' results hold the same samples and, for every head, the same scores (lists included)."""
    assert a["n_samples"] == b["n_samples"] > 0
    compared = 0
    for ha, hb in zip(a["heads"], b["heads"], strict=True):
        sa, sb = ha["scores"], hb["scores"]
        assert sa.keys() == sb.keys()
        for k in sa:
            np.testing.assert_allclose(np.asarray(sb[k], dtype=float), np.asarray(sa[k], dtype=float),
                                       rtol=1e-6, atol=1e-7, err_msg=k)
            compared += sa[k] is not None
    assert compared >= 10 * len(a["heads"])  # every head's scores, not a handful


@pytest.mark.parametrize("kwargs,said", [
    ({"device_map": "everywhere"}, "unknown device_map 'everywhere'"),
    ({"max_memory": {"cpu": "1GB"}}, "give device_map='auto' as well"),
    ({"device_map": "auto", "device": "cuda"}, "not both"),
    ({"device_map": "auto", "max_memory": {"cpu": "1MB"}}, "even the first layer went to the disk"),
])
def test_a_placement_that_cannot_apply_is_one_line(kwargs, said) -> None:
    need("smollm2-135m")
    with pytest.raises(HeadlabError, match=said):
        load("smollm2-135m", **kwargs)


def test_the_command_line_places_every_model_it_loads(tmp_path) -> None:
    """--device-map auto --max-memory cpu=250MB: the scan.json's heads are the in-memory scan's."""
    from headlab.cli import main

    need("smollm2-135m")
    corpus = tmp_path / "docs.md"
    corpus.write_text("\n\n".join(_texts()))
    args = ["scan", "smollm2-135m", "--corpus", str(corpus), "--max-samples", "6", "--max-length", "96",
            "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "whole")]) == 0
    assert main([*args, "--device-map", "auto", "--max-memory", "cpu=250MB", "--out", str(tmp_path / "placed")]) == 0
    a, b = (json.loads((tmp_path / d / "scan.json").read_text()) for d in ("whole", "placed"))
    _same_scores(a, b)
