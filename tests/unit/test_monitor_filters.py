"""The monitor evaluation's filters and statistics on inputs whose answer is known by hand: the Gopher and C4
rules, the n-gram perplexity, the record-level anomalies, the label-free combination and the paired gain."""

import math
import random

import numpy as np
import pytest

from headlab.monitor import rules
from headlab.monitor.anomalies import KINDS, Context, derive
from headlab.monitor.comparison import auroc_gain, fisher, pvalues
from headlab.monitor.ngram import BigramLM

PROSE = ("The river runs through the old town. It has been a trade route for the people of the valley since "
         "the first settlers arrived. Boats carry grain and timber to the coast. The town grew rich with the "
         "trade, and its market is still held on the bank every week. Visitors come to see the bridges and "
         "the mills that line the water.")


def test_clean_prose_passes_gopher_and_c4() -> None:
    assert rules.gopher(PROSE) == [] and rules.c4(PROSE) == ([], 0.0)


@pytest.mark.parametrize("text,rule", [
    ("word " * 20, "short"),  # 20 words < 50
    ("The cat and the dog. " + "# " * 60, "hashes"),
    ("\n".join(["- item with the and of words here"] * 60), "bullets"),
    (PROSE + " " + "x" * 20 + " ab" * 5, None),  # stays clean: one long token does not move the mean past 10
])
def test_each_gopher_rule_fires_on_its_case(text: str, rule: str | None) -> None:
    failed = rules.gopher(text)
    assert (rule in failed) if rule else failed == []


def test_gopher_repetition_counts_duplicated_lines_and_ngrams() -> None:
    doubled = "\n".join(line for s in PROSE.split(". ") for line in (s, s))
    failed = rules.gopher_repetition(doubled)
    assert "duplicate lines" in failed and "duplicate 10-grams" in failed
    assert rules.gopher_repetition(PROSE) == []


def test_c4_removes_lines_and_drops_pages_by_the_published_rules() -> None:
    menu = "Home | About | Contact"  # no terminal punctuation: the line goes
    failed, removed = rules.c4(menu + "\n" + PROSE)
    assert failed == [] and removed == pytest.approx(len(menu) / len(menu + "\n" + PROSE), abs=0.01)
    assert rules.c4(PROSE + "\nThe value is {a: 1} here.")[0] == ["curly bracket"]
    assert rules.c4(PROSE + "\nvar x = {a: 1};")[0] == []  # no terminal punctuation: removed before the check
    assert rules.c4("One sentence only. Two.")[0] == ["few sentences"]
    assert rules.c4_score(PROSE) == 0.0 and rules.c4_score("no end") == 2.0  # dropped, every character removed


def test_the_bigram_model_is_a_distribution_and_prefers_what_it_saw() -> None:
    lm = BigramLM([PROSE, "the town is old. the river is long."])
    vocab = list(lm.unigrams) + ["<never-seen>"]
    for prev in ("the", "river", "<never-seen>"):
        assert sum(lm._p(prev, w) for w in vocab) == pytest.approx(1.0)  # the unknown word holds the rest
    assert lm.perplexity("the river runs through the old town.") < lm.perplexity("town old the through runs river")


def test_every_anomaly_changes_the_record_in_its_own_way() -> None:
    rng, ctx = random.Random(0), Context(vocab=["xa"], code=["import os\n\n\ndef f(x):\n    return {x: 1}\n"])
    prose = PROSE.replace("its market", "the town's market")  # one apostrophe: something for mojibake to break
    out = {k: derive([prose], k, rng, ctx)[0] for k in KINDS}
    assert all(v != prose for v in out.values())
    assert derive([PROSE], "mojibake", rng, ctx) == []  # pure ASCII: nothing to break, no record
    assert len(out["duplicated-lines"].splitlines()) == 2 * len(out["duplicated-lines"].splitlines()[::2])
    assert "â€" in derive(["it's a \"test\" - yes"], "mojibake", rng, ctx)[0]  # ’ read as cp1252
    assert "<p>" in out["html-leftovers"] and "&amp;" in out["html-leftovers"]
    assert "return {x: 1}" in out["code-in-prose"] and out["code-in-prose"].startswith("The river")
    assert prose.startswith(out["truncated"]) and len(out["truncated"]) < 0.5 * len(prose)
    assert all("/" in line for line in out["url-list"].splitlines())
    assert out["navigation"].splitlines()[2] == prose


def test_pvalues_and_the_fisher_combination() -> None:
    cal = np.arange(1, 100, dtype=float)  # 99 calibration scores 1..99
    assert pvalues(cal, np.array([0.0, 99.0, 100.0])).tolist() == [1.0, 2 / 100, 1 / 100]
    a, b = np.array([100.0]), np.array([0.0])
    assert fisher([cal, cal], [a, b])[0] == pytest.approx(-math.log(0.01) - math.log(1.0))


def test_a_paired_gain_sees_a_small_sure_improvement() -> None:
    rng = np.random.default_rng(0)
    neg, pos = rng.normal(0, 1, 300), rng.normal(1, 1, 300)
    better = (neg, pos + 0.3)  # the same documents, every positive a little higher: a sure gain
    gain = auroc_gain(better, (neg, pos), rng)
    assert 0 < gain[1] <= gain[0] <= gain[2]
    same = auroc_gain((neg, pos), (neg, pos), rng)
    assert same == [0.0, 0.0, 0.0]
