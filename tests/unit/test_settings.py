"""One settings object per command family: the scan's defaults are defined once (ScanSettings) and the Python
twin, the CLI and the recorded settings all read them; bad values are refused with one line before any work."""

from __future__ import annotations

import dataclasses
import inspect
import math

import pytest

import headlab
from headlab.census.settings import DEFAULTS, ScanSettings
from headlab.census.stats import SDH
from headlab.cli import build_parser
from headlab.errors import HeadlabError


def _scan_parser():
    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    return sub.choices["scan"]


def test_the_twin_and_the_cli_take_every_scan_default_from_the_settings() -> None:
    params = inspect.signature(headlab.scan).parameters
    cli = _scan_parser().parse_args(["minilm-l6"])
    for f in dataclasses.fields(ScanSettings):
        assert params[f.name].default == getattr(DEFAULTS, f.name), f.name
        if hasattr(cli, f.name) and f.name != "detectors":
            assert getattr(cli, f.name) == getattr(DEFAULTS, f.name), f.name
    assert list(cli.detectors) == list(DEFAULTS.detectors)
    assert (DEFAULTS.threshold, DEFAULTS.consecutive) == (SDH.threshold, SDH.consecutive) == (0.5, 3)


@pytest.mark.parametrize("change, phrase", [
    ({"threshold": -1}, "--threshold"), ({"threshold": math.nan}, "--threshold"), ({"batch_size": 0}, "--batch-size"),
    ({"consecutive": 0}, "--consecutive"), ({"max_samples": "8"}, "--max-samples"),
    ({"max_length": None}, "--max-length"),
    ({"chunk_mb": 0}, "--chunk-mb"), ({"route": "warp"}, "--route"), ({"target_filter": "some"}, "--filter"),
    ({"detectors": ()}, "no detector"), ({"checkpoint_every": -2}, "--checkpoint-every"),
])
def test_bad_values_are_one_line_naming_the_option(change: dict, phrase: str) -> None:
    with pytest.raises(HeadlabError) as info:
        ScanSettings(**change)
    assert phrase in str(info.value) and "\n" not in str(info.value)


def test_one_name_is_one_detector_and_zero_samples_means_all() -> None:
    s = ScanSettings(detectors="token", max_samples=0)
    assert s.detectors == ("token",) and s.max_samples is None
    assert s.replace(seed=3).seed == 3
    with pytest.raises(HeadlabError, match="unknown scan setting"):
        s.replace(sead=3)


def test_one_string_where_a_list_is_expected_is_one_item(tmp_path) -> None:
    from pathlib import Path

    from headlab.values import items

    assert items("wiki") == ["wiki"] and items(("a", "b")) == ["a", "b"] and items(None) is None
    assert items(Path("x")) == [Path("x")] and items(3) == [3]
    root = Path(__file__).parents[2]
    w = headlab.scale(str(root / "results/study/claims"), out=tmp_path / "scale")  # one folder, not its letters
    assert len(w.data) == 4
    assert inspect.signature(headlab.scale).parameters["runs"].annotation  # the twin keeps its signature
