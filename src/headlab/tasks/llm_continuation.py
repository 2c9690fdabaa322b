"""Continuation scoring of the retrieval problem: what did the model *say*, and which kind of wrong is it?

The first-token rule of :mod:`.llm_eval` cannot tell a model that retrieves the wrong chain's end from one that
answers in another format (" The value is 7", " Let's see"). Here the model continues each prompt greedily for
up to ``max_new`` tokens (end-of-text not allowed first); the continuation is *normalised*: the first word
made of letters or digits on its first non-blank line, compared case-sensitively (variable names are single
capitals). Each answer gets one outcome (ours):

* ``answer`` — the queried chain's end (for multiple choice: the right letter, or the right option's text);
* ``distractor`` — another chain's end (multiple choice: another letter, or another option's text);
* ``hop`` — a variable of the queried chain (the model stopped early or echoed the question);
* ``other-name`` — any other variable or person of the prompt;
* ``format`` — anything else (no word, a sentence opener such as "The", a token not in the prompt).

``answer`` is the accuracy; ``distractor + hop + other-name`` are retrieval failures, ``format`` failures are
the prompt's, not the retrieval's.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from ..errors import HeadlabError
from ..models import LoadedModel

OUTCOMES = ("answer", "distractor", "hop", "other-name", "format")
_WORD = re.compile(r"[A-Za-z0-9]+")


def normalise(text: str) -> str:
    """The first word of the first non-blank line ('' when there is none)."""
    m = _WORD.search(text.lstrip().split("\n", 1)[0])
    return m.group(0) if m else ""


def outcome(ex: dict[str, Any], word: str) -> str:
    """One of :data:`OUTCOMES` for the normalised continuation ``word`` of example ``ex``."""
    if "choices" in ex:
        right_text = ex["answer_text"]
        if word == ex["answer"] or word == right_text:
            return "answer"
        if word in "ABCD" and len(word) == 1 or word in ex["choices"] or word in ex["ends"]:
            return "distractor"
    else:
        if word == ex["answer"]:
            return "answer"
        if word in ex["ends"]:
            return "distractor"
    if word in ex["path"]:
        return "hop"
    if word in ex["names"]:
        return "other-name"
    return "format"


@torch.no_grad()
def continuations(loaded: LoadedModel, prompts: list[str], batch_size: int, max_new: int) -> list[str]:
    """Greedy continuations (decoded text of up to ``max_new`` new tokens), batched by prompt length with left
    padding so that every row's next token follows its own last prompt token. End-of-text is not allowed as the
    first new token (SmolLM2 would end most free-form answers right after "Answer:"; its next choice is
    what it would say)."""
    tok = loaded.tokenizer
    enc = [tok(p)["input_ids"] for p in prompts]
    longest = max(map(len, enc), default=0)
    if longest + max_new > loaded.facts.max_length:
        raise HeadlabError(f"a prompt of {longest} tokens plus {max_new} new ones exceeds {loaded.name}'s window "
                           f"({loaded.facts.max_length})")
    device = next(loaded.model.parameters()).device
    order = sorted(range(len(enc)), key=lambda i: len(enc[i]))
    out = [""] * len(enc)
    for i in range(0, len(order), batch_size):
        rows = order[i:i + batch_size]
        T = max(len(enc[r]) for r in rows)
        ids = torch.full((len(rows), T), loaded.pad_id, dtype=torch.long)
        mask = torch.zeros(len(rows), T, dtype=torch.long)
        for j, r in enumerate(rows):
            ids[j, T - len(enc[r]):] = torch.tensor(enc[r])
            mask[j, T - len(enc[r]):] = 1
        gen = loaded.model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=False,
                                    max_new_tokens=max_new, min_new_tokens=1, pad_token_id=loaded.pad_id,
                                    top_p=None, top_k=None, temperature=None)
        for j, r in enumerate(rows):
            out[r] = tok.decode(gen[j, T:].tolist(), skip_special_tokens=True)
    return out


def tally(examples: list[dict[str, Any]], texts: list[str]) -> tuple[dict[str, int], list[str]]:
    """(count per outcome, the normalised words)."""
    words = [normalise(t) for t in texts]
    counts = dict.fromkeys(OUTCOMES, 0)
    for ex, w in zip(examples, words):
        counts[outcome(ex, w)] += 1
    return counts, words
