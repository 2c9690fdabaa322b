"""The streaming path on tiny real-architecture models: batch-size invariance and padding."""

import numpy as np
import pytest

from headlab.census.engine import score_samples
from headlab.corpus import Sample
from headlab.detectors import make

from ..support import random_samples
from .tiny import Slash, tiny

_samples = random_samples


@pytest.mark.parametrize("kind", ["llama", "bert", "mpnet"])
def test_scores_do_not_depend_on_batch_size_or_padding(kind):
    lm = tiny(kind)
    Slash(lm)
    names = ["token", "offset", "previous-token", "duplicate-token", "induction", "sink"]
    runs = {}
    for bs in (1, 4):
        dets = [make(n) for n in names]
        chunks = list(score_samples(lm, dets, _samples(), batch_size=bs))
        runs[bs] = {n: np.concatenate([c[1][n] for c in chunks]) for n in names}
        order = [s.index for c in chunks for s in c[0]]
        assert order == list(range(11))  # seeded order is kept
    for n in names:
        assert runs[1][n].shape[:3] == (11, lm.facts.n_layers, lm.facts.n_heads)
        np.testing.assert_allclose(runs[1][n], runs[4][n], atol=2e-5, equal_nan=True)
    tok = runs[1]["token"]
    assert np.isnan(tok[1::2]).all() and not np.isnan(tok[0::2]).any()  # undefined without a target


def test_too_long_sample_is_a_clear_error():
    lm = tiny("llama")
    Slash(lm)
    from headlab.errors import HeadlabError

    with pytest.raises(HeadlabError, match="exceeds"):
        list(score_samples(lm, [make("sink")], [Sample(0, "x", 0, tuple([5] * 200))]))


@pytest.mark.parametrize("kind", ["llama", "bert"])
@pytest.mark.parametrize("route", ["eager", "fused"])
def test_a_forward_that_turns_non_finite_names_its_first_layer(kind: str, route: str) -> None:
    """Scores of a pattern holding NaN are never written as numbers: the scan stops at the first bad layer."""
    import torch

    from headlab.errors import HeadlabError

    lm = tiny(kind)
    Slash(lm)
    layers = lm.model.layers if kind == "llama" else lm.model.encoder.layer
    with torch.no_grad():
        proj = layers[1].self_attn.q_proj if kind == "llama" else layers[1].attention.self.query
        proj.weight[0, 0] = float("inf")
    with pytest.raises(HeadlabError, match="first at layer 1 "):
        list(score_samples(lm, [make("sink"), make("token")], _samples(), route=route))


def test_a_resume_with_another_per_sample_file_is_refused(tmp_path) -> None:
    """The checkpoint's fingerprint holds the per-sample file: rows of two files are never mixed."""
    import pytest

    from headlab.census.scanner import scan
    from headlab.errors import HeadlabError
    from headlab.nn import ModelConfig, Transformer, as_loaded, train_bpe

    texts = [f"text {i} with a/b and more words" * 3 for i in range(12)]
    tok = train_bpe(texts, 300)
    lm = as_loaded(Transformer(ModelConfig(vocab_size=len(tok), n_layers=1, n_heads=2, d_model=16)), tok, "tiny")
    opts = dict(detectors=["previous-token"], max_samples=None, max_length=16, batch_size=2, progress=False,
                checkpoint_dir=tmp_path, checkpoint_every=4)
    scan(lm, texts, per_sample=tmp_path / "a.parquet", **opts)
    with pytest.raises(HeadlabError, match="other settings"):
        scan(lm, texts, per_sample=tmp_path / "b.parquet", resume=True, **opts)


def test_a_resume_after_a_corpus_file_was_rewritten_is_refused(tmp_path) -> None:
    """A corpus file changed between the kill and the resume would mix two texts' samples: refused."""
    import os

    from headlab.census.scanner import scan
    from headlab.errors import HeadlabError
    from headlab.nn import ModelConfig, Transformer, as_loaded, train_bpe

    texts = [f"text {i} with a/b and more words" * 3 for i in range(12)]
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n\n".join(texts))
    tok = train_bpe(texts, 300)
    lm = as_loaded(Transformer(ModelConfig(vocab_size=len(tok), n_layers=1, n_heads=2, d_model=16)), tok, "tiny")
    opts = dict(corpus=[str(corpus)], detectors=["previous-token"], max_samples=None, max_length=16,
                batch_size=2, progress=False, checkpoint_dir=tmp_path / "out", checkpoint_every=4)
    (tmp_path / "out").mkdir()
    scan(lm, None, **opts)
    assert scan(lm, None, resume=True, **opts).n_samples > 0  # the same files: resumed
    corpus.write_text(corpus.read_text().replace("more", "fewer"))
    os.utime(corpus, ns=(1, 1))
    with pytest.raises(HeadlabError, match="other corpus files"):
        scan(lm, None, resume=True, **opts)


def test_a_replaced_tokenizer_gets_its_own_ids_and_a_bigger_vocabulary_is_refused() -> None:
    import dataclasses

    import pytest

    from headlab.census.scanner import scan
    from headlab.errors import HeadlabError
    from headlab.nn import ModelConfig, Transformer, as_loaded, train_bpe

    small = train_bpe(["a/b c/d e f"] * 8, 300)
    lm = as_loaded(Transformer(ModelConfig(vocab_size=len(small), n_layers=1, n_heads=2, d_model=16)), small, "m")
    before = lm.ids_containing("/")
    other = train_bpe(["x y z w"] * 8, 280)
    swapped = dataclasses.replace(lm, tokenizer=other)  # shares lm's cache dict: entries are per tokenizer
    swapped.ids_containing("/")
    assert {key[0] for key in lm._ids_cache} == {id(small), id(other)}
    assert lm.ids_containing("/") == before
    big = train_bpe(["a/b c/d e f g h i j k"] * 8, 400)
    with pytest.raises(HeadlabError, match="tokenizer has .* tokens but the model embeds"):
        scan(dataclasses.replace(lm, tokenizer=big), ["a/b c/d"], progress=False)


def _odd(change):  # type: ignore[no-untyped-def]
    """A plugin detector: the previous-token detector's scores, changed by ``change`` before they are returned."""
    from headlab.detectors import DETECTORS

    class Odd(DETECTORS["previous-token"]):  # type: ignore[misc, valid-type]
        name = "odd"

        def score(self, batch):  # type: ignore[no-untyped-def]
            return change(super().score(batch))

    return Odd()


def test_a_detector_that_scores_nothing_is_said_and_recorded(capsys) -> None:
    """Every score NaN (undefined everywhere): the scan says so on stderr and in the result's warnings."""
    from headlab.census.scanner import scan
    from headlab.nn import ModelConfig, Transformer, as_loaded, train_bpe

    texts = [f"text {i} with some words" * 3 for i in range(4)]
    tok = train_bpe(texts, 300)
    lm = as_loaded(Transformer(ModelConfig(vocab_size=len(tok), n_layers=1, n_heads=2, d_model=16)), tok, "tiny")
    r = scan(lm, texts, detectors=[_odd(lambda s: s * float("nan"))], max_length=16, progress=False)
    assert any("detector 'odd' scored nothing" in w for w in r.warnings)
    assert "detector 'odd' scored nothing" in capsys.readouterr().err
