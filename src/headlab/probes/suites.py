"""The stimulus suites: slash contexts, symbol controls, position sweep and contexts.

``slash``      URLs, paths, dates, alternatives, fractions, units and code, in English and Chinese.
``controls``   the same filled templates with every target `/` swapped for each control symbol.
``positions``  one `/` at every relative position of fixed-length windows of natural words.
``contexts``   natural text with `/`, the same words shuffled, uniformly random vocabulary tokens with a
               `/` inserted (the out-of-distribution prompts of Cheng et al.; needs a tokenizer), and
               natural text with no `/` at all.
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable, Sequence

from headlab.errors import HeadlabError
from headlab.probes.base import Stimulus, spans_of
from headlab.probes.templates import (
    CONTROL_SYMBOLS,
    FILES,
    HOSTS,
    NOUNS,
    NUMBERS,
    SEGMENTS,
    TEMPLATES,
    UNITS,
    VARS,
    ZH_SUBJ,
)

_FIELD = re.compile(r"\{(\w+)\}")
_POOLS = {"host": HOSTS, "seg": SEGMENTS, "file": FILES, "noun": NOUNS, "unit": UNITS, "num": NUMBERS,
          "var": VARS, "subj": ZH_SUBJ, "month": [f"{m:02d}" for m in range(1, 13)],
          "day": [f"{d:02d}" for d in range(1, 29)]}

# Natural filler sentences (no '/') for the position sweep and the context suite.
FILLER = ("The committee met on a quiet morning to review the annual budget and the plans for the new library "
          "building near the river. Several members asked for more time to read the reports before any vote "
          "was taken, and the chair agreed to meet again next week. Local residents have followed the project "
          "closely since it was first proposed, and many of them attended the meeting to hear the discussion.")
#: words in a window of the position sweep (characterize's ``words`` setting reads this one declaration)
POSITION_WORDS = 24


def _fill(template: str, rng: random.Random) -> str:
    return _FIELD.sub(lambda m: rng.choice(_POOLS[m.group(1)]), template)


def slash(n: int, seed: int, languages: Sequence[str] = ("en", "zh")) -> list[Stimulus]:
    """``n`` slash-context stimuli cycling through languages and categories; every `/` is a target."""
    rng = random.Random(seed)
    keys = [(lang, cat, i) for lang in languages for cat, ts in TEMPLATES[lang].items() for i in range(len(ts))]
    if not keys:
        raise HeadlabError(f"no templates for languages {list(languages)}")
    out = []
    for k in range(n):
        lang, cat, i = keys[k % len(keys)]
        text = _fill(TEMPLATES[lang][cat][i], rng)
        out.append(Stimulus("slash", text, spans_of(text, "/"), f"{lang}.{cat}.{i}#{k}",
                            {"language": lang, "category": cat, "symbol": "/"}))
    return out


def controls(n: int, seed: int, symbols: Sequence[str] = CONTROL_SYMBOLS,
             languages: Sequence[str] = ("en", "zh")) -> list[Stimulus]:
    """For each of the ``n`` slash stimuli of the same seed: the original and one copy per control symbol,
    with each target `/` replaced in place (same template slot, same spans)."""
    out = []
    for s in slash(n, seed, languages):
        out.append(s)
        for sym in symbols:
            if len(sym) != 1:
                raise HeadlabError(f"control symbols must be single characters, not {sym!r}")
            chars = list(s.text)
            for a, _ in s.spans:
                chars[a] = sym
            out.append(Stimulus("controls", "".join(chars), s.spans, s.template, {**s.meta, "symbol": sym}))
    return out


def positions(n: int, seed: int, words: int = POSITION_WORDS) -> list[Stimulus]:
    """``n`` windows of ``words`` natural words; for each window, one copy per gap k = 1..words-1 with a
    standalone `/` inserted between word k-1 and word k. ``meta.position`` is the relative position k/words."""
    rng = random.Random(seed)
    pool = FILLER.split()
    if words < 2 or words > len(pool):
        raise HeadlabError(f"words must be between 2 and {len(pool)}")
    out = []
    for w in range(n):
        start = rng.randrange(0, len(pool) - words + 1)
        ws = pool[start:start + words]
        for k in range(1, words):
            text = " ".join(ws[:k]) + " / " + " ".join(ws[k:])
            a = len(" ".join(ws[:k])) + 1
            out.append(Stimulus("positions", text, ((a, a + 1),), f"window{w}",
                                {"position": k / words, "gap": k, "words": words, "symbol": "/"}))
    return out


def contexts(n: int, seed: int, tokenizer: Any = None) -> list[Stimulus]:
    """Per item: ``natural`` (a slash sentence), ``shuffled`` (its words shuffled, the `/` kept),
    ``random`` (uniformly random vocabulary tokens around one `/`, as many as the natural sentence has
    tokens, so attention mass is not diluted by length; needs ``tokenizer``) and ``no-slash`` (natural
    filler without `/`)."""
    rng = random.Random(seed)
    base = slash(n, seed, ("en",))
    pool = FILLER.split()
    out = []
    for s in base:
        out.append(Stimulus("contexts", s.text, s.spans, s.template, {**s.meta, "context": "natural"}))
        words = s.text.split(" ")
        rng.shuffle(words)
        shuffled = " ".join(words)
        out.append(Stimulus("contexts", shuffled, spans_of(shuffled, "/"), s.template,
                            {**s.meta, "context": "shuffled"}))
        if tokenizer is not None:
            length = max(2, len(tokenizer(s.text, add_special_tokens=False)["input_ids"]) - 1)
            out.append(_random_tokens(tokenizer, rng, length, s.template, s.meta))
        start = rng.randrange(0, len(pool) - 12)
        plain = " ".join(pool[start:start + 12])
        out.append(Stimulus("contexts", plain, (), s.template, {**s.meta, "context": "no-slash", "symbol": None}))
    return out


def _random_tokens(tokenizer: Any, rng: random.Random, length: int, template: str,
                   meta: dict[str, Any]) -> Stimulus:
    special = set(tokenizer.all_special_ids)
    vocab = [i for i in range(len(tokenizer)) if i not in special]
    left = tokenizer.decode([rng.choice(vocab) for _ in range(length // 2)]).replace("/", " ")
    right = tokenizer.decode([rng.choice(vocab) for _ in range(length - length // 2)]).replace("/", " ")
    text = f"{left} / {right}"
    a = len(left) + 1
    return Stimulus("contexts", text, ((a, a + 1),), template, {**meta, "context": "random"})


SUITES: dict[str, Callable[..., list[Stimulus]]] = {
    "slash": slash, "controls": controls, "positions": positions, "contexts": contexts,
}


def make_suite(name: str, n: int, seed: int, **options: Any) -> list[Stimulus]:
    fn = SUITES.get(name)
    if fn is None:
        raise HeadlabError(f"unknown stimulus suite '{name}'; known: {', '.join(SUITES)}")
    if n < 1:
        raise HeadlabError("--n must be at least 1")
    return fn(n, seed, **options)
