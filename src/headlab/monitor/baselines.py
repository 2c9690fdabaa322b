"""Attention-free baselines the head monitor is judged against, computed on the very windows the heads saw.

* ``characters``: per window the shares of letters, digits, whitespace, punctuation, upper case and non-ASCII
  characters and the mean word length of its decoded text;
* ``loss`` (decoders): per window the model's own mean next-token cross-entropy (nats) over its real tokens,
  i.e. log-perplexity.

Both are averaged per document, as the heads' fingerprints are, and scored by the same profile machinery.

Document baselines (:data:`DOCUMENT_BASELINES`) score the record's own text, as a data pipeline sees it:

* ``gopher``: the number of Gopher quality and repetition rules it fails (:mod:`.rules`; dropped at 1);
* ``c4``: 1 for a page the C4 rules drop, plus the share of characters its line rules remove;
* ``ngram``: its perplexity under a word bigram model of the reference (:mod:`.ngram`; CCNet filters with a
  5-gram, this is a bigram).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from headlab.ablation.metrics import window_losses
from headlab.monitor import rules
from headlab.monitor.ngram import BigramLM

CHAR_FEATURES = ("letters", "digits", "whitespace", "punctuation", "upper", "non-ascii", "word-length")


def char_features(text: str) -> list[float]:
    n = max(1, len(text))
    words = text.split()
    return [sum(c.isalpha() for c in text) / n, sum(c.isdigit() for c in text) / n,
            sum(c.isspace() for c in text) / n, sum((not c.isalnum()) and not c.isspace() for c in text) / n,
            sum(c.isupper() for c in text) / n, sum(ord(c) > 127 for c in text) / n,
            float(np.mean([len(w) for w in words])) if words else 0.0]


def per_document(rows: Any, values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Mean of per-window ``values`` (windows x k) per document, documents sorted by id."""
    # deferred: pandas is optional (the notebook extra)
    import pandas as pd

    df = pd.DataFrame(values.reshape(len(rows), -1))
    df["doc"] = rows["doc"].to_numpy()
    means = df.groupby("doc", sort=True).mean()
    return means.to_numpy(dtype=np.float64), [str(d) for d in means.index]


Baseline = tuple[tuple[str, ...], Callable[[Any, list[str]], np.ndarray]]


def baselines(loaded: Any, batch_size: int) -> dict[str, Baseline]:
    """The baselines that apply to ``loaded``: name -> (feature names, per-window values from (rows, texts)); the
    loss is computed ``batch_size`` windows a forward."""
    out: dict[str, Baseline] = {
        "characters": (CHAR_FEATURES, lambda rows, texts: np.array([char_features(t) for t in texts]))}
    if loaded.facts.causal and loaded.model.get_output_embeddings() is not None:
        out["loss"] = (("loss",), lambda rows, texts: window_losses(loaded, [list(i) for i in rows["ids"]],
                                                                             batch_size)[:, None])
    return out


#: name -> (reference texts the baseline learns from -> the score of one record's text)
DOCUMENT_BASELINES: dict[str, Callable[[list[str]], Callable[[str], float]]] = {
    "gopher": lambda reference: rules.gopher_score,
    "c4": lambda reference: rules.c4_score,
    "ngram": lambda reference: BigramLM(reference).perplexity,
}
#: the baselines a pipeline runs as a keep/drop rule, and the score at which it drops
DROPS_AT = {"gopher": 1.0, "c4": 1.0}
