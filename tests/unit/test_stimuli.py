import json

import pytest

from headlab.cli import main
from headlab.errors import HeadlabError
from headlab.probes import (
    Stimulus,
    contexts,
    controls,
    make_suite,
    positions,
    read_stimuli,
    slash,
    target_token_positions,
    write_stimuli,
)
from headlab.probes.templates import CONTROL_SYMBOLS, TEMPLATES


def test_slash_suite_covers_every_category_and_language_with_marked_spans():
    items = slash(100, seed=3)  # the default suite: English and Chinese, as every earlier characterization
    cats = {(s.meta["language"], s.meta["category"]) for s in items}
    assert cats == {(lang, cat) for lang in ("en", "zh") for cat in TEMPLATES[lang]}
    every = slash(200, seed=3, languages=tuple(TEMPLATES))
    assert {(s.meta["language"], s.meta["category"]) for s in every} == {
        (lang, cat) for lang in TEMPLATES for cat in TEMPLATES[lang]}
    assert set(TEMPLATES) == {"en", "zh", "de", "fr", "ja"}
    assert all(set(TEMPLATES[lang]) == set(TEMPLATES["en"]) for lang in TEMPLATES)  # the same slots everywhere
    items += every
    for s in items:
        assert s.spans and all(sym == "/" for sym in s.symbols)
        assert s.text.count("/") == len(s.spans)
    assert [s.text for s in slash(30, seed=3)] == [s.text for s in items[:30]]  # seeded, prefix-stable
    assert [s.text for s in slash(30, seed=4)] != [s.text for s in items[:30]]


def test_controls_swap_only_the_target_characters():
    items = controls(10, seed=1)
    groups: dict[str, list[Stimulus]] = {}
    for s in items:
        groups.setdefault(s.template, []).append(s)
    for group in groups.values():
        orig = group[0]
        assert orig.meta["symbol"] == "/" and len(group) == 1 + len(CONTROL_SYMBOLS)
        for c in group[1:]:
            assert c.spans == orig.spans and len(c.text) == len(orig.text)
            diff = [i for i, (x, y) in enumerate(zip(orig.text, c.text)) if x != y]
            assert diff == [a for a, _ in orig.spans]
            assert set(c.symbols) == {c.meta["symbol"]}


def test_position_sweep_places_one_slash_at_every_gap():
    items = positions(2, seed=0, words=10)
    assert len(items) == 2 * 9
    first = [s for s in items if s.template == "window0"]
    assert [s.meta["gap"] for s in first] == list(range(1, 10))
    for s in first:
        assert s.symbols == ["/"] and s.text.count("/") == 1
        assert len(s.text.split()) == 11
        assert s.text.split().index("/") == s.meta["gap"]


def test_contexts_without_tokenizer_and_no_slash_items():
    items = contexts(5, seed=0)
    kinds = [s.meta["context"] for s in items]
    assert kinds.count("natural") == kinds.count("shuffled") == kinds.count("no-slash") == 5
    assert all(not s.spans and "/" not in s.text for s in items if s.meta["context"] == "no-slash")
    for nat, shuf in zip([s for s in items if s.meta["context"] == "natural"],
                         [s for s in items if s.meta["context"] == "shuffled"]):
        assert sorted(nat.text.split(" ")) == sorted(shuf.text.split(" "))


def test_jsonl_round_trip_and_cli(tmp_path, capsys):
    items = controls(3, seed=2)
    assert write_stimuli(items, tmp_path / "c.jsonl") == len(items)
    assert read_stimuli(tmp_path / "c.jsonl") == items
    assert main(["stimuli", "positions", "--n", "2", "--seed", "1", "--out", str(tmp_path / "p.jsonl")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 23 and all(r["text"][r["spans"][0][0]] == "/" for r in rows)
    with pytest.raises(HeadlabError, match="unknown stimulus suite"):
        make_suite("nope", 1, 0)


class OffsetTokenizer:
    """Whitespace tokenizer with offsets, the interface target_token_positions uses."""

    def __call__(self, text, add_special_tokens=True, return_offsets_mapping=False):
        ids, offs, i = [], [], 0
        for w in text.split(" "):
            ids.append(len(w))
            offs.append((i, i + len(w)))
            i += len(w) + 1
        return {"input_ids": ids, "offset_mapping": offs}


def test_target_token_positions_maps_spans_to_tokens():
    s = positions(1, seed=0, words=6)[2]
    ids, pos = target_token_positions(OffsetTokenizer(), s.text, s.spans)
    assert pos == [s.meta["gap"]]
