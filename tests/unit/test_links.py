"""One way to walk results/: no reader follows a symbolic link to a folder, and each names the links it left out;
a result file that links outside the folder judged is refused in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import headlab
from headlab.errors import HeadlabError
from headlab.notices import recorded

ROOT = Path(__file__).resolve().parents[2]


def test_report_leaves_out_a_linked_folder_and_names_it(tmp_path):
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    shutil.copytree(ROOT / "results/quickstart/scan", run / "scan")
    shutil.copytree(ROOT / "results/quickstart/scan", elsewhere / "scan")
    (run / "borrowed").symlink_to(elsewhere / "scan")
    with recorded() as said:
        r = headlab.report(run, out=tmp_path / "r")
    assert any("borrowed: a link to" in s and "not followed" in s for s in said)
    assert any("borrowed" in x for x in r.left_out) and "borrowed" in r.markdown()


def test_verdicts_names_a_linked_folder_and_refuses_a_file_linked_from_outside(tmp_path):
    root = tmp_path / "results"
    shutil.copytree(ROOT / "results/study/trained", root / "study" / "trained")
    shutil.copytree(ROOT / "results/study/trained", tmp_path / "forged")
    (root / "study" / "copy").symlink_to(tmp_path / "forged")
    with recorded() as said:
        headlab.verdicts(root)
    assert any("copy is a link to" in s and "not followed" in s for s in said)
    (root / "study" / "one").mkdir()
    (root / "study" / "one" / "claims.json").symlink_to(tmp_path / "forged" / "claims.json")
    with pytest.raises(HeadlabError, match="one/claims.json is a link to .* outside") as e:
        headlab.verdicts(root)
    assert "\n" not in str(e.value)
