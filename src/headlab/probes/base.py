"""Constructed stimuli: texts with the character spans of their target symbols marked.

Spans are character offsets, so any tokenizer can map them to token positions
(:func:`target_token_positions`). Every generator is seeded and deterministic.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from headlab.corpus import Sample
from headlab.errors import HeadlabError
from headlab.io import write_text_atomic

if TYPE_CHECKING:
    from headlab.corpus import Sample


@dataclass(frozen=True)
class Stimulus:
    """One constructed text.

    ``spans``: ``[start, end)`` character offsets of the target symbols (the `/` or its control);
    ``template``: which template slot produced it, so a control and its `/` original can be paired;
    ``meta``: suite-specific facts (category, language, symbol, relative position, context kind, ...).
    """

    suite: str
    text: str
    spans: tuple[tuple[int, int], ...]
    template: str
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for a, b in self.spans:
            if not 0 <= a < b <= len(self.text):
                raise ValueError(f"span {(a, b)} outside text of length {len(self.text)}")

    @property
    def symbols(self) -> list[str]:
        return [self.text[a:b] for a, b in self.spans]

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["spans"] = [list(s) for s in self.spans]
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Stimulus":
        return Stimulus(d["suite"], d["text"], tuple(tuple(s) for s in d["spans"]), d["template"], d.get("meta", {}))


def spans_of(text: str, symbol: str) -> tuple[tuple[int, int], ...]:
    """Every occurrence of ``symbol`` in ``text`` as spans (non-overlapping, left to right)."""
    out, i = [], text.find(symbol)
    while i >= 0:
        out.append((i, i + len(symbol)))
        i = text.find(symbol, i + len(symbol))
    return tuple(out)


def target_token_positions(tokenizer: Any, text: str, spans: Sequence[tuple[int, int]],
                           add_special_tokens: bool = True) -> tuple[list[int], list[int]]:
    """Tokenize ``text`` and return ``(input_ids, positions)``: the token positions whose characters overlap
    a target span. Needs a fast tokenizer (offset mapping)."""
    try:
        enc = tokenizer(text, add_special_tokens=add_special_tokens, return_offsets_mapping=True)
    except (NotImplementedError, TypeError, ValueError) as exc:
        raise HeadlabError(f"tokenizer cannot map characters to tokens (needs a fast tokenizer): {exc}") from exc
    positions = []
    for i, (a, b) in enumerate(enc["offset_mapping"]):
        if b > a and any(a < e and s < b for s, e in spans):
            positions.append(i)
    return list(enc["input_ids"]), positions


def write_stimuli(stimuli: Iterable[Stimulus], path: str | Path) -> int:
    lines = [json.dumps(s.to_json(), ensure_ascii=False) for s in stimuli]
    write_text_atomic(path, "\n".join(lines) + ("\n" if lines else ""))
    return len(lines)


def read_stimuli(path: str | Path) -> list[Stimulus]:
    try:
        return [Stimulus.from_json(json.loads(line)) for line in Path(path).read_text(encoding="utf-8").splitlines()
                if line.strip()]
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        raise HeadlabError(f"cannot read stimuli from {path}: {exc}") from exc


def to_samples(stimuli: Sequence[Stimulus], tokenizer: Any, max_length: int) -> list["Sample"]:
    """Tokenize stimuli (with the model's special tokens) into samples whose ``targets`` are the token
    positions of the marked spans. A stimulus longer than ``max_length`` tokens is an error, not truncated."""

    out = []
    for i, s in enumerate(stimuli):
        ids, pos = target_token_positions(tokenizer, s.text, s.spans)
        if len(ids) > max_length:
            raise HeadlabError(f"stimulus {i} has {len(ids)} tokens, more than the window ({max_length})")
        if s.spans and not pos:
            raise HeadlabError(f"stimulus {i}: its marked characters map to no token ({s.text[:60]!r})")
        out.append(Sample(i, f"{s.suite}:{s.template}", 0, tuple(int(x) for x in ids), tuple(pos)))
    return out
