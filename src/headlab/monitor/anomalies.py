"""Record-level anomalies built from real reference prose, the derived kinds of the monitor evaluation.

Each kind is one function ``(text, rng, context) -> text`` in :data:`KINDS`; they model what corpus filters are
built to catch: scraped boilerplate and navigation, duplicated lines, mojibake, HTML leftovers, code pasted into
prose, machine-shuffled words, truncated records and path/URL lists. Kinds made of real documents of another
kind (source code, man pages, other languages) are the evaluation's real kinds.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Callable

_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_PREFIXES = ("/usr/share/", "https://www.", "./src/", "C:/data/")
_TYPESET = str.maketrans({"'": "’", '"': "”", "-": "–"})


@dataclass(frozen=True)
class Context:
    vocab: list[str] = field(default_factory=list)  # the model's alphabetic vocabulary words
    code: list[str] = field(default_factory=list)  # real source files to cut snippets from


def _path(rng: random.Random, words: list[str], i: int) -> str:
    return rng.choice(_PREFIXES) + "/".join(words[i:i + 3]).lower().strip(".,")


def shuffled(text: str, rng: random.Random, ctx: Context) -> str:
    words = text.split()
    rng.shuffle(words)
    return " ".join(words)


def boilerplate(text: str, rng: random.Random, ctx: Context) -> str:
    return " ".join([" ".join(text.split()[:12])] * 8)


def paths(text: str, rng: random.Random, ctx: Context) -> str:
    words = text.split()
    return " ".join(w if i % 4 else _path(rng, words, i) for i, w in enumerate(words))


def random_tokens(text: str, rng: random.Random, ctx: Context) -> str:
    return " ".join(rng.choice(ctx.vocab) for _ in range(max(20, len(text.split()))))


def duplicated_lines(text: str, rng: random.Random, ctx: Context) -> str:
    """One sentence per line, every line written twice (a page scraped with its paragraphs doubled)."""
    return "\n".join(line for s in _SENTENCES.split(text) for line in (s, s))


def navigation(text: str, rng: random.Random, ctx: Context) -> str:
    """The prose between a menu of its own capitalised words and a site footer."""
    words = [w.strip(".,;:()").title() for w in text.split() if len(w) > 3][:8]
    return "\n".join(["Skip to main content", " | ".join(["Home", *words]), text,
                      "About us | Contact | Privacy policy | Terms of use | © 2019 All rights reserved"])


def mojibake(text: str, rng: random.Random, ctx: Context) -> str:
    """Typeset quotes and dashes, then the UTF-8 bytes read as cp1252, as a mis-declared web page shows them."""
    return text.translate(_TYPESET).encode("utf-8").decode("cp1252", errors="replace")


def html_leftovers(text: str, rng: random.Random, ctx: Context) -> str:
    """Sentences in paragraph tags, every seventh word a link, entities for spaces and ampersands."""
    linked = " ".join(f'<a href="/wiki/{w.strip(".,")}">{w}</a>' if i % 7 == 3 else w
                      for i, w in enumerate(text.split()))
    body = "".join(f"<p>{s}&nbsp;</p>" for s in _SENTENCES.split(linked.replace(" and ", " &amp; ")))
    return f'<div class="mw-parser-output">{body}</div>'


def code_in_prose(text: str, rng: random.Random, ctx: Context) -> str:
    """A dozen consecutive lines of real source code pasted into the middle of the prose."""
    lines = [line for line in rng.choice(ctx.code).splitlines() if line.strip()]
    start = rng.randrange(max(1, len(lines) - 12))
    sentences = _SENTENCES.split(text)
    half = len(sentences) // 2
    return "\n".join([" ".join(sentences[:half]), *lines[start:start + 12], " ".join(sentences[half:])])


def truncated(text: str, rng: random.Random, ctx: Context) -> str:
    """The record cut off after 15-40% of its words, in the middle of the next word."""
    words = text.split()
    k = min(len(words) - 1, max(1, int(len(words) * rng.uniform(0.15, 0.40))))
    return " ".join([*words[:k], words[k][:max(1, len(words[k]) // 2)]]) if len(words) > 1 else text[:1]


def url_list(text: str, rng: random.Random, ctx: Context) -> str:
    """A list of paths and URLs made of the record's words, one per line (a link dump)."""
    words = text.split()
    return "\n".join(_path(rng, words, i) for i in range(0, max(1, len(words) - 2), 3))


#: kind -> builder; the order is the evaluation's order (each kind draws from one shared seeded generator)
KINDS: dict[str, Callable[[str, random.Random, Context], str]] = {
    "shuffled": shuffled, "boilerplate": boilerplate, "paths": paths, "random-tokens": random_tokens,
    "duplicated-lines": duplicated_lines, "navigation": navigation, "mojibake": mojibake,
    "html-leftovers": html_leftovers, "code-in-prose": code_in_prose, "truncated": truncated,
    "url-list": url_list}


def derive(prose: list[str], kind: str, rng: random.Random, ctx: Context) -> list[str]:
    """``kind`` made of each text of ``prose``; a text the kind leaves unchanged (mojibake of pure ASCII) is
    left out, so that every record of a kind is an anomaly."""
    return [out for text in prose if (out := KINDS[kind](text, rng, ctx)) != text]
