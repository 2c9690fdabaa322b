"""A result file is sealed with the sha256 of its content: read back as written, refused once a value in it was
changed by hand, whatever the file's formatting."""

from __future__ import annotations

import json
import math

import pytest

from headlab.errors import HeadlabError
from headlab.io import SEAL, sealed, unsealed, write_json_atomic


def test_a_sealed_document_reads_back_whatever_its_keys_and_values(tmp_path):
    doc = {"b": 1, "a": {2: [1.5, math.nan, "é"], 10: None}, "heads": [{"name": "0.1", "score": 1e-300}]}
    path = write_json_atomic(tmp_path / "r.json", sealed(doc))
    back = unsealed(json.loads(path.read_text()), path)
    assert back == {"b": 1, "a": {"2": [1.5, None, "é"], "10": None}, "heads": [{"name": "0.1", "score": 1e-300}]}
    # formatting is not content: the same document written compactly, keys reordered, still reads
    compact = json.loads(path.read_text())
    path.write_text(json.dumps(dict(reversed(list(compact.items())))))
    assert unsealed(json.loads(path.read_text()), path) == back


@pytest.mark.parametrize("edit", [
    lambda d: d["heads"][0].update(score=5.0),   # a value
    lambda d: d.update(extra=True),              # a field added
    lambda d: d.pop("b"),                        # a field removed
])
def test_a_value_changed_by_hand_is_refused_naming_the_file(tmp_path, edit):
    path = write_json_atomic(tmp_path / "scan.json", sealed({"b": 1, "heads": [{"score": 0.2}]}))
    doc = json.loads(path.read_text())
    edit(doc)
    with pytest.raises(HeadlabError, match="scan.json was changed after headlab wrote it") as e:
        unsealed(doc, path)
    assert "\n" not in str(e.value)


def test_a_document_written_before_seals_reads_as_it_is():
    assert unsealed({"b": 1}, "old.json") == {"b": 1}
    assert SEAL not in unsealed(sealed({"b": 1}), "new.json")
