import json

import numpy as np
import pytest

from headlab import scan
from headlab.cli import main
from headlab.errors import HeadlabError
from headlab.study.compare import CompareResult, compare

from .conftest import SLASH_TEXTS, named

pytestmark = pytest.mark.integration


def test_compare_scan_runs_writes_table_json_and_png(tmp_path):
    lm = named("minilm-l6")
    a, b = tmp_path / "a", tmp_path / "b"
    scan(lm, SLASH_TEXTS, max_samples=None, progress=False).write(a)
    scan(lm, SLASH_TEXTS[:3], max_samples=None, progress=False).write(b)
    with pytest.raises(HeadlabError, match="measured alike"):  # other texts: not set side by side
        compare([a, b], tmp_path / "cmp")
    scan(named("smollm2-135m"), SLASH_TEXTS, max_samples=None, progress=False).write(b)
    r = compare([a, b], tmp_path / "cmp")
    sums = CompareResult.read(tmp_path / "cmp").summaries()  # the folder reads back through the registry
    assert [s.model for s in sums] == ["minilm-l6", "smollm2-135m"]
    assert sums[0].token_by_layer.shape == (6,) and 0 < sums[0].depth[0] < sums[0].depth[-1] < 1
    np.testing.assert_allclose(sums[0].token_by_layer, r.summaries()[0].token_by_layer)
    j = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert "sdh_share_corpus" in j["runs"][0]["measures"]
    assert (tmp_path / "cmp" / "compare.md").read_text() == r.markdown()
    assert (tmp_path / "cmp" / "compare.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["compare", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "x")]) == 2
