"""The committed claims tables are what their committed parts measure: each model's scan, characterization and
ablation beside the table, and the monitor evaluations it names, give every row, statistic and verdict again
through the one path ``headlab claims`` takes (:mod:`headlab.study.remeasure`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from headlab.errors import HeadlabError
from headlab.study.claims import ClaimsResult
from headlab.study.remeasure import remeasure

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("table", ["results/study/claims", "results/study/trained"])
def test_a_committed_claims_table_is_what_its_parts_measure(table, monkeypatch):
    monkeypatch.chdir(ROOT)  # the table names its monitor folder from the repository's root
    assert remeasure(table).to_json() == ClaimsResult.read(table).to_json()


def test_a_table_without_its_parts_is_refused_naming_the_file(tmp_path):
    import shutil

    shutil.copy(ROOT / "results/study/trained/claims.json", tmp_path / "claims.json")
    with pytest.raises(HeadlabError, match="xs/scan.json is not there"):
        remeasure(tmp_path)
