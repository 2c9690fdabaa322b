"""Continuation scoring of the retrieval problem: what did the model *say*, and which kind of wrong is it?

The first-token rule of :mod:`.llm_eval` cannot tell a model that retrieves the wrong chain's end from one that
answers in another format (" The value is 7", "\n\nK = 7."). Here the model continues each prompt greedily for
up to ``max_new`` tokens (end-of-text not allowed first). The claim is read from the first non-blank line of
the continuation, its words being runs of letters or digits (compared case-sensitively: variable names are
single capitals), after a leading ``A:`` / ``Answer:`` marker is dropped. Each answer gets one outcome (ours):

* free form — if the line starts with a variable (or person) of the prompt, the line is a statement about it:
  the queried one followed by a chain's end is that end's answer ("K = 7"), any other is ``hop`` (a variable of
  the queried chain: a copied link, an early stop) or ``other-name``; otherwise the first chain end on the line
  decides ("The answer is 7"): ``answer`` (the queried chain's end) or ``distractor`` (another chain's end);
  no end and no name: ``format``;
* multiple choice — a first word A-D is the choice (``answer`` or ``distractor``); otherwise the first option
  text on the line counts the same way; then names (``hop`` / ``other-name``); else ``format``.

``answer`` is the accuracy; ``distractor + hop + other-name`` are retrieval failures, ``format`` failures are
the prompt's, not the retrieval's. The raw continuations are kept with the result, so a different reading can be
applied without generating again.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from headlab.errors import HeadlabError
from headlab.models import LoadedModel

OUTCOMES = ("answer", "distractor", "hop", "other-name", "format")
_WORD = re.compile(r"[A-Za-z0-9]+")
_MARKER = re.compile(r"^\s*(A|Answer)\s*:")


def normalise(text: str) -> list[str]:
    """The words of the first non-blank line, without a leading ``A:`` / ``Answer:`` marker."""
    line = text.lstrip().split("\n", 1)[0]
    return _WORD.findall(_MARKER.sub("", line, count=1))


def _by_name(ex: dict[str, Any], word: str) -> str | None:
    if word in ex["path"]:
        return "hop"
    return "other-name" if word in ex["names"] else None


def outcome(ex: dict[str, Any], words: list[str]) -> str:
    """One of :data:`OUTCOMES` for the normalised continuation ``words`` of example ``ex``."""
    if "choices" in ex:
        if words and len(words[0]) == 1 and words[0] in "ABCD":
            return "answer" if words[0] == ex["answer"] else "distractor"
        for w in words:
            if w in ex["choices"] or w in ex["ends"]:
                return "answer" if w == ex["answer_text"] else "distractor"
        return _by_name(ex, words[0]) or "format" if words else "format"
    ends = [ex["answer"], *ex["ends"]]
    if words and words[0] in ex["names"]:
        rest = [w for w in words[1:] if w in ends]
        if words[0] == ex["path"][-1] and rest:  # "K = 7": a claim about the queried variable
            return "answer" if rest[0] == ex["answer"] else "distractor"
        return _by_name(ex, words[0])  # type: ignore[return-value]
    for w in words:
        if w in ends:
            return "answer" if w == ex["answer"] else "distractor"
    return "format"


@torch.no_grad()
def continuations(loaded: LoadedModel, prompts: list[str], batch_size: int, max_new: int) -> list[str]:
    """Greedy continuations (decoded text of up to ``max_new`` new tokens), batched by prompt length with left
    padding so that every row's next token follows its own last prompt token. End-of-text is not allowed as the
    first new token (SmolLM2 would end most free-form answers right after "Answer:"; its next choice is
    what it would say)."""

    tok = loaded.tokenizer
    enc, order = encode_by_length(loaded, prompts, reserve=max_new)
    device = next(loaded.model.parameters()).device
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


def tally(examples: list[dict[str, Any]], texts: list[str]) -> dict[str, int]:
    """Count per outcome."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for ex, t in zip(examples, texts):
        counts[outcome(ex, normalise(t))] += 1
    return counts


def encode_by_length(loaded: LoadedModel, prompts: list[str], reserve: int = 0) -> tuple[list[list[int]], list[int]]:
    """(token ids per prompt, prompt indices shortest first: batches of similar length pad little); refuses a
    prompt that with ``reserve`` more tokens would not fit the model's window."""
    enc = [loaded.tokenizer(p)["input_ids"] for p in prompts]
    longest = max(map(len, enc), default=0)
    if longest + reserve > loaded.facts.max_length:
        more = f" plus {reserve} new ones" if reserve else ""
        raise HeadlabError(f"a prompt of {longest} tokens{more} exceeds {loaded.name}'s window "
                           f"({loaded.facts.max_length})")
    return enc, sorted(range(len(enc)), key=lambda i: len(enc[i]))
