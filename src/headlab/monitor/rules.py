"""The document filters data pipelines run today, as published, for the monitor evaluation to be judged against.

* **Gopher** (Rae et al. 2021, "Scaling Language Models: Methods, Analysis & Insights from Training Gopher",
  appendix A.1.1 and table A1): the quality rules (word count, mean word length, `#` and ellipsis ratios,
  bullet and ellipsis lines, alphabetic words, stop words) and the repetition rules (duplicate lines and
  paragraphs, top 2-4-gram and duplicate 5-10-gram character fractions).
* **C4** (Raffel et al. 2020, "Exploring the Limits of Transfer Learning", section 2.2, with the extra rules of
  its reference code ``tensorflow_datasets/text/c4_utils.py``): lines kept only when they end in terminal
  punctuation, hold 3 words or more, and mention neither javascript nor a cookie/terms policy; pages dropped
  when fewer than 5 sentences remain, or for "lorem ipsum" or a curly bracket. The bad-words list is left out,
  as datatrove leaves it out.

Thresholds are datatrove's defaults (``GopherQualityFilter``, ``GopherRepetitionFilter``, ``C4QualityFilter``),
which are the papers'. Written here rather than imported: datatrove splits words with spaCy's tokenizer, some
300 MB of dependencies for rules that need only words and lines; ``bench/rules_parity.py`` measures how often
these rules and datatrove's reach the same keep/drop decision.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
# close to how spaCy splits English: a URL or a path is one token, an option keeps its dashes ("-m"), a man
# reference keeps its parenthesis ("ls(1"), an ellipsis is one token, any other mark stands alone
_WORDS = re.compile(r"\w+://[^\s()]+|(?<!\S)/[\w./-]+|(?<![\w-])-+\w+|\w+\(\w+|\w+(?:['’]\w+)*|\.\.\.|[^\w\s]")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_POLICY = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
TOP_NGRAMS = ((2, 0.20), (3, 0.18), (4, 0.16))
DUP_NGRAMS = ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10))


def words(text: str) -> list[str]:
    return [m.group() for m in _WORDS.finditer(text)]


def _symbol(word: str) -> bool:
    return all(unicodedata.category(c)[0] in "PS" for c in word)


def _duplicates(items: list[str]) -> tuple[int, int]:
    """(duplicate items, their characters): every repeat of an item seen before counts."""
    seen: set[str] = set()
    n = chars = 0
    for x in items:
        if x in seen:
            n, chars = n + 1, chars + len(x)
        seen.add(x)
    return n, chars


def _repeated_ngram_chars(ws: list[str], n: int) -> int:
    """Characters of the n-grams that repeat an earlier one, a repeat skipping its own words (as in Gopher)."""
    seen: set[str] = set()
    chars = i = 0
    while i < len(ws) - n + 1:
        gram = "".join(ws[i:i + n])
        if gram in seen:
            chars, i = chars + len(gram), i + n
        else:
            seen.add(gram)
            i += 1
    return chars


def gopher_quality(text: str, ws: list[str] | None = None) -> list[str]:
    """The Gopher quality rules ``text`` fails (empty: kept); ``ws``: its :func:`words`, if already split."""
    ws = words(text) if ws is None else ws
    real = [w for w in ws if not _symbol(w)]
    failed = ["short"] if len(real) < 50 else ["long"] if len(real) > 100_000 else []
    if real:
        mean = sum(map(len, real)) / len(real)
        failed += ["short words"] if mean < 3 else ["long words"] if mean > 10 else []
    if not ws:
        return failed
    failed += ["hashes"] * (text.count("#") / len(ws) > 0.1)
    failed += ["ellipses"] * ((text.count("...") + text.count("…")) / len(ws) > 0.1)
    lines = text.splitlines() or [""]
    failed += ["bullets"] * (sum(s.lstrip().startswith(("•", "-")) for s in lines) / len(lines) > 0.9)
    failed += ["ellipsis lines"] * (sum(s.rstrip().endswith(("...", "…")) for s in lines) / len(lines) > 0.3)
    failed += ["non-alphabetic"] * (sum(any(c.isalpha() for c in w) for w in ws) / len(ws) < 0.8)
    failed += ["stop words"] * (len(STOP_WORDS & {w.lower() for w in ws}) < 2)
    return failed


def gopher_repetition(text: str, ws: list[str] | None = None) -> list[str]:
    """The Gopher repetition rules ``text`` fails; ``ws``: its :func:`words`, if already split."""
    if not text.strip():
        return ["empty"]
    failed = []
    for name, parts in (("paragraphs", re.split(r"\n{2,}", text.strip())), ("lines", re.split(r"\n+", text))):
        n, chars = _duplicates(parts)
        failed += [f"duplicate {name}"] * (n / len(parts) > 0.3)
        failed += [f"duplicate {name} characters"] * (chars / len(text) > 0.2)
    ws = words(text) if ws is None else ws
    for n, limit in TOP_NGRAMS:
        grams = Counter(" ".join(ws[i:i + n]) for i in range(len(ws) - n + 1))
        if grams:
            gram, count = grams.most_common(1)[0]
            failed += [f"top {n}-gram"] * (len(gram) * count / len(text) > limit)
    failed += [f"duplicate {n}-grams" for n, limit in DUP_NGRAMS if _repeated_ngram_chars(ws, n) / len(text) > limit]
    return failed


def gopher(text: str) -> list[str]:
    """Every Gopher rule ``text`` fails, quality then repetition; a pipeline drops the document if any."""
    ws = words(text)  # split once: both rule sets read the same words
    return gopher_quality(text, ws) + gopher_repetition(text, ws)


def c4(text: str) -> tuple[list[str], float]:
    """The C4 page rules ``text`` fails and the share of its characters its line rules remove."""
    kept, sentences, failed = [], 0, []
    for raw in text.splitlines():  # the rules in the reference code's order: a skipped line is not checked further
        if any(len(w) > 1000 for w in raw.split()):
            continue
        line = _CITATION.sub("", raw.strip())
        if not line.endswith((".", "?", "!", '"', "'")) or line.endswith("...") or len(raw.split()) < 3:
            continue
        low = line.lower()
        failed += ["lorem ipsum"] * ("lorem ipsum" in low)
        if "javascript" in low:
            continue
        failed += ["curly bracket"] * ("{" in line)
        if any(p in low for p in _POLICY):
            continue
        sentences += len([s for s in _SENTENCE_END.split(line) if s.strip()])
        kept.append(line)
    failed += ["few sentences"] * (sentences < 5)
    removed = 1.0 - sum(map(len, kept)) / max(1, len(text.strip()))
    return sorted(set(failed)), max(0.0, removed)


def gopher_score(text: str) -> float:
    """Rules failed: 0 for a kept document; a pipeline drops at 1 or more."""
    return float(len(gopher(text)))


def c4_score(text: str) -> float:
    """1 for a dropped page plus the share of characters its line rules remove: dropped pages rank first."""
    failed, removed = c4(text)
    return float(bool(failed)) + removed
