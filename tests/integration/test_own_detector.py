"""A detector registered from outside the package, written the way the built-in ones are, reaches every output:
the scan's choices and validation, scan.json, heads.csv (one cell per column of a detector with several), the
report and the viewer; and every built-in detector, alone or with the others, writes every output."""

from __future__ import annotations

import csv
import json

import pytest
import torch

import headlab
from headlab.census.result import ScanResult
from headlab.detectors import DETECTORS, Batch, Detector
from tests.support import need

TEXTS = ["Attention heads read the previous token, the first token, or a copy of an earlier one.",
         "A path such as /usr/share/doc holds slashes; so does a URL like https://example.org/a/b.",
         "Short texts are enough: the detector only has to reach every output once."]


class EvenTokens(Detector):
    """Attention mass on tokens with an even id (any rule would do: it is the plumbing that is tested)."""

    name = "mine-even"
    summary = "attention mass on tokens with an even id"
    label = "even-token mass (mine)"
    meaning = "attention on tokens with an even id"
    hint = "text made of even tokens"

    def prepare(self, batch: Batch) -> None:
        even = ((batch.input_ids % 2) == 0).float() * batch.query_mask
        batch.key_mass("mine-even", batch.query_mask, even)

    def score(self, batch: Batch) -> torch.Tensor:
        return batch.pair_mass("mine-even") / batch.query_mask.sum(-1).clamp_min(1)[:, None]


class Parity(Detector):
    """Two columns: the mass on even and on odd tokens."""

    name = "mine-parity"
    summary = "attention mass on even and on odd token ids"
    columns = ("even", "odd")

    def prepare(self, batch: Batch) -> None:
        even = ((batch.input_ids % 2) == 0).float() * batch.query_mask
        batch.key_mass("mine-parity:even", batch.query_mask, even)
        batch.key_mass("mine-parity:odd", batch.query_mask, batch.query_mask - even)

    def score(self, batch: Batch) -> torch.Tensor:
        n = batch.query_mask.sum(-1).clamp_min(1)[:, None]
        return torch.stack([batch.pair_mass("mine-parity:even") / n, batch.pair_mass("mine-parity:odd") / n], -1)


for cls in (EvenTokens, Parity):
    if cls.name not in DETECTORS:  # a module imported twice in one process registers once
        headlab.register_detector(cls)


def test_a_detector_registered_from_outside_reaches_scan_json_heads_csv_the_report_and_the_viewer(tmp_path):
    need("minilm-l6")
    out = tmp_path / "scan"
    r = headlab.scan("minilm-l6", TEXTS, detectors=["token", "mine-even", "mine-parity"], out=out, progress=False)
    assert set(r.means) == {"token", "mine-even", "mine-parity"} and r.means["mine-parity"].shape == (6, 12, 2)
    heads = json.loads((out / "scan.json").read_text())["heads"]
    assert 0 < heads[0]["scores"]["mine-even"] < 1 and len(heads[0]["scores"]["mine-parity"]) == 2
    # the two columns share each query's attention between them
    assert sum(heads[0]["scores"]["mine-parity"]) == pytest.approx(1, abs=1e-4)
    with open(out / "heads.csv") as fh:
        header = next(csv.reader(fh))
    assert {"mine-even", "mine-parity:even", "mine-parity:odd", "token", "sdh"} <= set(header)
    again = ScanResult.read(out)
    assert torch.allclose(torch.tensor(again.means["mine-parity"]), torch.tensor(r.means["mine-parity"]))
    headlab.report(tmp_path, out=tmp_path / "report")
    assert "| even-token mass (mine) |" in (tmp_path / "report" / "report.md").read_text()  # its label, its heads
    page = headlab.view(out, out=tmp_path / "view.html", progress=False)
    assert "mine-even" in (tmp_path / "view.html").read_text() and page is not None


@pytest.mark.parametrize("detectors", [["token", "linked"], ["marked"], ["entropy"], ["linked"]])
def test_every_built_in_detector_writes_every_output(tmp_path, detectors):
    need("minilm-l6")
    out = tmp_path / "scan"
    headlab.scan("minilm-l6", TEXTS, detectors=detectors, out=out, progress=False, route="eager")
    with open(out / "heads.csv") as fh:
        header = next(csv.reader(fh))
    for d in detectors:
        assert any(h == d or h.startswith(f"{d}:") for h in header), (d, header)
    assert set(ScanResult.read(out).means) == set(detectors)


def test_a_detector_with_a_name_the_files_cannot_carry_is_refused():
    bad = type("Bad", (EvenTokens,), {"name": "my_detector"})
    with pytest.raises(headlab.HeadlabError, match="letters, digits and inner dashes"):
        headlab.register_detector(bad)
    with pytest.raises(headlab.HeadlabError, match="already registered"):
        headlab.register_detector(EvenTokens)
    alike = type("Alike", (EvenTokens,), {"name": "t\u043eken"})  # a Cyrillic о: it would show as the built-in
    with pytest.raises(headlab.HeadlabError, match="ASCII letters.*U\\+043E"):
        headlab.register_detector(alike)
    assert "t\u043eken" not in headlab.detectors.DETECTORS


def test_the_write_your_own_detector_page_runs_as_written(tmp_path, capsys):
    """docs/guide/own-detector.md's example, run as a reader would paste it."""
    import re
    from pathlib import Path

    need("minilm-l6")
    page = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "own-detector.md").read_text()
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    if "punctuation" in DETECTORS:  # run twice in one process: register once
        code = code.replace("headlab.register_detector(Punctuation)\n", "")
    exec(compile(code, "own-detector.md", "exec"), {"__name__": "own_detector_page"})  # noqa: S102
    printed = capsys.readouterr().out
    assert printed.count("(") >= 3 and "." in printed  # three heads, L.H with their scores
    assert DETECTORS["punctuation"].label == "punctuation mass"
