"""Texts → samples: token windows in a seeded order, with optional target filters.

A sample is one text, or one window of a text longer than the window. Texts are never packed together
(packing would let heads attend across documents). Window rules, for a window of ``length`` tokens:

* the text is tokenized without special tokens, cut into bodies of ``length - n_special`` tokens, and each
  body gets the model's own special tokens back (``[CLS] … [SEP]`` for BERT, BOS for decoders that use one);
* consecutive bodies start ``stride`` tokens apart (default: the body length, i.e. non-overlapping windows
  that cover every token exactly once); the last window may be shorter; nothing is dropped.

Order: documents are visited in a permutation drawn from ``seed``; their windows pass through a seeded
shuffle buffer (1024 windows) so consecutive samples rarely come from the same document. The order depends
only on the corpus, the tokenizer, the window settings and the seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Literal, Sequence

import numpy as np

from headlab.corpus.document import Document
from headlab.errors import HeadlabError

TargetFilter = Literal["any", "with-target", "without-target"]
#: the filters a sample stream can apply, the first keeping every sample
FILTERS: tuple[TargetFilter, ...] = ("any", "with-target", "without-target")
ANY: TargetFilter = FILTERS[0]
SHUFFLE_BUFFER = 1024
#: a text longer than this is tokenized piece by piece, as its windows are needed: tokenizing a 50 MB line at once
#: costs minutes and gigabytes before the first window. A piece ends before a whitespace, where BPE, WordPiece and
#: SentencePiece pre-tokenizers split anyway, so the pieces' tokens are the whole text's (tested)
PIECE_CHARS = 1 << 20


@dataclass(frozen=True)
class Sample:
    """One model input. ``input_ids`` include the special tokens."""

    index: int  # position in the seeded order, from 0
    doc_id: str
    window: int  # window number within its text
    input_ids: tuple[int, ...]
    targets: tuple[int, ...] = ()  # token positions of marked targets (constructed stimuli), if any
    # (label, query position, key position, weight) pairs a constructed probe names (the ``linked`` detector)
    links: tuple[tuple[str, int, int, float], ...] = ()


@dataclass(frozen=True)
class SpecialTokens:
    prefix: tuple[int, ...]
    suffix: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.prefix) + len(self.suffix)


def special_tokens(tokenizer: Any) -> SpecialTokens:
    """Find what the tokenizer adds around a text by tokenizing a probe with and without special tokens."""
    probe = "headlab probe text"
    bare = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    full = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    for start in range(len(full) - len(bare) + 1):
        if full[start:start + len(bare)] == bare:
            return SpecialTokens(tuple(full[:start]), tuple(full[start + len(bare):]))
    return SpecialTokens((), ())


def windows(ids: Sequence[int], body: int, stride: int) -> Iterator[list[int]]:
    """Cut ``ids`` into bodies of at most ``body`` tokens starting ``stride`` apart, covering every token."""
    if body < 1 or stride < 1:
        raise HeadlabError(f"window body ({body}) and stride ({stride}) must be at least 1 token")
    if stride > body:
        raise HeadlabError(f"stride {stride} is larger than the window body {body}: tokens would be skipped")
    n, s = len(ids), 0
    while n:
        yield list(ids[s:s + body])
        if s + body >= n:
            break
        s += stride


def stream_windows(pieces: Iterable[list[int]], body: int, stride: int) -> Iterator[list[int]]:
    """:func:`windows` over the concatenation of ``pieces``, reading a piece only when a window needs it."""
    if body < 1 or stride < 1 or stride > body:
        yield from windows([], body, stride)  # the same one-line refusal
        return
    it, buf, start, done = iter(pieces), [], 0, False
    while True:
        while not done and len(buf) - start <= body:  # one token past the window says whether more follows
            nxt = next(it, None)
            done = nxt is None
            buf.extend(nxt or ())
        if len(buf) == start:
            return
        yield buf[start:start + body]
        if len(buf) - start <= body:
            return
        start += stride
        if start > len(buf) // 2:
            del buf[:start]
            start = 0


def pieces(text: str, size: int) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters, each cut before its last whitespace where there is one
    (a word keeps its leading space, as byte-level BPE and SentencePiece read it)."""
    i = 0
    while i < len(text):
        j = min(len(text), i + size)
        if j < len(text):
            cut = max(text.rfind(" ", i, j), text.rfind("\n", i, j))
            j = cut if cut > i else j
        yield text[i:j]
        i = j


class Sampler:
    """Seeded stream of :class:`Sample` from documents, for one tokenizer and window setting."""

    def __init__(self, tokenizer: Any, length: int, stride: int | None = None, *, seed: int,
                 target_ids: Iterable[int] = (), target_filter: TargetFilter = ANY,
                 cache: dict[str, list[int]] | None = None):
        self.tokenizer = tokenizer
        # text -> token ids, shared by samplers of one tokenizer that pass over the same documents (a pool drawn
        # with and without the target, plus its probe set, tokenized once instead of three times)
        self.cache = cache
        self.special = special_tokens(tokenizer)
        self.length = length
        self.body = length - self.special.count
        if self.body < 1:
            raise HeadlabError(f"window length {length} leaves no room beside {self.special.count} special tokens")
        self.stride = stride or self.body
        self.seed = seed
        self.target_ids = frozenset(target_ids)
        if target_filter not in ("any", "with-target", "without-target"):
            raise HeadlabError(f"unknown filter '{target_filter}' (any, with-target, without-target)")
        self.target_filter = target_filter

    def _keep(self, ids: Sequence[int]) -> bool:
        if self.target_filter == "any":
            return True
        has = any(i in self.target_ids for i in ids)
        return has if self.target_filter == "with-target" else not has

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        cache = self.cache if self.cache is not None else {}
        todo = list(dict.fromkeys(t for t in texts if t not in cache))
        if todo:  # verbose=False: "sequence longer than the maximum" is expected, we window afterwards
            cache.update(zip(todo, (list(x) for x in self.tokenizer(todo, add_special_tokens=False,
                                                                     verbose=False)["input_ids"])))
        return [cache[t] for t in texts]

    def _windows(self, docs: Sequence[Document], rng: random.Random) -> Iterator[tuple[str, int, tuple[int, ...]]]:
        order = list(range(len(docs)))
        rng.shuffle(order)
        p, s = self.special.prefix, self.special.suffix
        for di in order:
            doc = docs[di]
            for text_windows in self._text_windows([t for t in doc.load() if t.strip()]):
                for w, body in enumerate(text_windows):
                    if self._keep(body):
                        yield doc.doc_id, w, p + tuple(body) + s

    def _text_windows(self, texts: list[str]) -> Iterator[Iterator[list[int]]]:
        """The windows of each text in order: short texts tokenized together, long ones piece by piece."""
        short: list[str] = []
        for t in [*texts, None]:
            if t is not None and len(t) <= PIECE_CHARS:
                short.append(t)
                continue
            for ids in self._tokenize(short) if short else []:
                yield windows(ids, self.body, self.stride)
            short = []
            if t is not None:
                yield stream_windows((self._tokenize([piece])[0] for piece in pieces(t, PIECE_CHARS)),
                                     self.body, self.stride)

    def samples(self, docs: Sequence[Document], max_samples: int | None = None) -> Iterator[Sample]:
        """Samples in the seeded order; stops after ``max_samples`` (None: the whole corpus)."""
        rng = random.Random(self.seed)
        buf: list[tuple[str, int, tuple[int, ...]]] = []
        produced = 0

        def emit(item: tuple[str, int, tuple[int, ...]]) -> Sample:
            nonlocal produced
            produced += 1
            return Sample(produced - 1, item[0], item[1], item[2])

        for item in self._windows(docs, rng):
            if max_samples is not None and produced >= max_samples:
                return
            buf.append(item)
            if len(buf) >= SHUFFLE_BUFFER:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield emit(buf.pop())
        rng.shuffle(buf)
        for item in buf:
            if max_samples is not None and produced >= max_samples:
                return
            yield emit(item)


def repeat_probe(tokenizer: Any, n: int, length: int, seed: int) -> list[Sample]:
    """``n`` samples: [bos] + r + r for a random token sequence r of ``(length - 1) // 2`` (non-special) tokens."""
    rng = np.random.default_rng(seed)
    special = set(tokenizer.all_special_ids)
    pool = np.array([i for i in range(len(tokenizer)) if i not in special])
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    half = (length - len(bos)) // 2
    return [Sample(i, "repeat", 0, tuple(bos + (r := rng.choice(pool, half).tolist()) + r)) for i in range(n)]
