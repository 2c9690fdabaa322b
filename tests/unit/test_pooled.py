"""One shared check for every list that pools evidence: the same run, seed, model, language or folder given twice
is refused, whether by the same value, another name for the same path (a symbolic link) or a copy with the same
content; different items pass."""

from __future__ import annotations

import pytest

from headlab.errors import HeadlabError
from headlab.values import repeated


def test_the_same_value_twice_is_named():
    assert "0 is given twice" in repeated("seeds", [0, 1, 0])
    assert repeated("seeds", [0, 1, 2]) is None and repeated("seeds", None) is None


def test_a_symbolic_link_and_a_copy_are_the_same_evidence(tmp_path):
    run = tmp_path / "s0"
    (run / "track").mkdir(parents=True)
    (run / "track" / "track.json").write_text('{"steps": [1]}')
    (tmp_path / "link").symlink_to(run)
    assert "by another name" in repeated("runs", [str(run), str(tmp_path / "link")])
    copy = tmp_path / "copy"
    (copy / "track").mkdir(parents=True)
    (copy / "track" / "track.json").write_text('{"steps": [1]}')
    assert "a copy of" in repeated("runs", [str(run), str(copy)])
    (copy / "track" / "track.json").write_text('{"steps": [2]}')  # another run: other content
    assert repeated("runs", [str(run), str(copy)]) is None


def test_every_list_setting_refuses_a_repeat():
    from headlab.formation.induce.arms import InduceSettings
    from headlab.study.languages import LanguagesSettings

    with pytest.raises(HeadlabError, match="--seeds: 0 is given twice"):
        InduceSettings(seeds=(0, 0))
    with pytest.raises(HeadlabError, match="'en' is given twice"):
        LanguagesSettings(languages=("en", "en"))
