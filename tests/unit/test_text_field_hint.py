"""A curator's JSONL that keeps its text in another field is refused, before any model is loaded, by a line that
names the fields its records hold and --text-field."""

from __future__ import annotations

import json

import pytest

from headlab.errors import HeadlabError
from headlab.monitor.fingerprint import check_corpus


def test_records_without_text_name_their_fields_in_the_refusal(tmp_path):
    data = tmp_path / "records.jsonl"
    data.write_text("".join(json.dumps({"id": i, "content": f"record {i}"}) + "\n" for i in range(5)))
    with pytest.raises(HeadlabError) as e:
        check_corpus([str(data)], "id")
    said = str(e.value)
    assert "is empty" in said and "'content'" in said and "--text-field" in said and "\n" not in said
    assert len(check_corpus([str(data)], "id", "content")) == 5
