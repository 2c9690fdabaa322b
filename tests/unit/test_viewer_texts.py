"""What a viewer page shows in words: the texts (given ones, a text file's lines, a JSONL file's records) and
what each score means."""


def test_a_jsonl_texts_file_shows_its_records_texts_as_scan_reads_them_not_its_json(tmp_path):
    from headlab.api.seeing import _texts

    f = tmp_path / "t.jsonl"
    f.write_text('{"id": "a", "text": "path a/b"}\n{"content": "no text field"}\n{"id": "c", "text": "x / y"}\n')
    got = _texts(None, f)
    assert got == [("t.jsonl#a", "path a/b"), ("t.jsonl#c", "x / y")]  # no '{"' shown as tokens
    plain = tmp_path / "t.txt"
    plain.write_text('{"text": "kept as written"}\n\nsecond\n')
    assert _texts("given", plain) == [("text 0", "given"), ("t.txt:1", '{"text": "kept as written"}'),
                                      ("t.txt:3", "second")]


def test_a_page_names_each_score_in_its_detectors_words():
    import numpy as np

    from headlab.views.data import ViewData, about

    assert "SlashScore" in about("offset") and about("previous_token") == "attention to the previous token"
    assert about("monitor loss") == ""  # no detector makes it: shown by its name alone
    scores = {"offset": np.zeros((1, 2)), "monitor loss": np.zeros((1, 2))}
    meta = ViewData("t", "", "scan", 1, 2, True, [], [None], [scores]).meta()
    assert meta["about"] == {"offset": about("offset")}
