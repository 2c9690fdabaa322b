"""A word-bigram perplexity baseline (named ``ngram`` in results): a document scored by its perplexity under a
word bigram model trained on the reference, in the manner of CCNet's filter (Wenzek et al. 2020), but not CCNet's
model.

CCNet trains a KenLM 5-gram with Kneser-Ney smoothing on Wikipedia; kenlm needs a C++ build, so this is an
interpolated absolute-discounting bigram (Ney, Essen & Kneser 1994, discount 0.75) over lower-cased words, with
an add-one unigram under it so an unseen word keeps some mass. It is trained on the reference documents the
profiles are fitted on, so it asks the same question as the heads: how unlike the reference is this document.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Sequence

from headlab.monitor.rules import words

DISCOUNT = 0.75


def _tokens(text: str) -> list[str]:
    return ["<s>", *(w.lower() for w in words(text)), "</s>"]


class BigramLM:
    def __init__(self, texts: Sequence[str]):
        self.unigrams: Counter[str] = Counter()
        self.bigrams: dict[str, Counter[str]] = defaultdict(Counter)
        for text in texts:
            ts = _tokens(text)
            self.unigrams.update(ts)
            for a, b in zip(ts, ts[1:]):
                self.bigrams[a][b] += 1
        self.total = sum(self.unigrams.values())
        self.vocab = len(self.unigrams) + 1  # + the unknown word

    def _p(self, prev: str, word: str) -> float:
        uni = (self.unigrams[word] + 1) / (self.total + self.vocab)
        follow = self.bigrams.get(prev)
        if not follow:
            return uni
        n = sum(follow.values())
        return max(follow[word] - DISCOUNT, 0.0) / n + DISCOUNT * len(follow) / n * uni

    def perplexity(self, text: str) -> float:
        ts = _tokens(text)
        nll = -sum(math.log(self._p(a, b)) for a, b in zip(ts, ts[1:]))
        return math.exp(nll / (len(ts) - 1))
