"""Which tokens an ablation scores (``headlab ablate --positions``): one frozen row per way, naming the primary
samples it draws, the (scored, rest) masks of a batch, and the words a report uses for the scored tokens.

* ``after`` (default): targets within ``k`` tokens after ``symbol`` (encoders: the symbol's positions) in corpus
  text drawn half with the symbol, half without; the rest is every token of the samples without it;
* ``all``: every token of corpus text drawn with no filter (any corpus; nothing is left as the rest);
* ``marked``: the marked spans of the first stimulus suite (near the marked symbol as above), the rest being the
  other tokens of the same items. No corpus is drawn;
* ``repeat``: random tokens repeated twice (:func:`headlab.corpus.repeat_probe`): the second copy is scored, the
  first is the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from headlab.ablation.metrics import symbol_mask, token_sets
from headlab.corpus import Sample, Sampler, documents, repeat_probe
from headlab.errors import HeadlabError
from headlab.models import LoadedModel


class PositionSettings(Protocol):
    """What the rows read of the experiment's settings (:class:`headlab.ablation.experiment.AblateSettings`,
    which offers this table's names as its choices)."""

    @property
    def samples(self) -> int: ...
    @property
    def window(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def corpus(self) -> Sequence[str] | None: ...
    @property
    def symbol(self) -> str: ...
    @property
    def k(self) -> int: ...


Masks = tuple[np.ndarray, np.ndarray]  # (scored, rest), bool (B, T)


@dataclass(frozen=True)
class Positions:
    """One way of choosing the scored tokens. ``samples`` gives the primary samples (None: the first stimulus
    suite is the primary part); ``masks(batch, symbol_ids, causal, k, stimuli)``; ``words(st, causal, primary)``
    says what was scored; ``symbol``: the symbol must be in the vocabulary; ``suites``: needs a stimulus suite;
    ``part``: the primary part's name."""

    samples: Callable[[LoadedModel, PositionSettings, frozenset[int]], list[Sample] | None]
    masks: Callable[[Any, frozenset[int], bool, int, bool], Masks]
    words: Callable[[PositionSettings, bool, str], str]
    symbol: bool = False
    suites: bool = False
    part: str = "corpus"  # the primary part's name: "corpus" is drawn text, anything else constructed items


def _near_symbol(batch: Any, symbol_ids: frozenset[int], causal: bool, k: int, stimuli: bool) -> Masks:
    return token_sets(batch, symbol_mask(batch, symbol_ids), causal, k, stimuli)


def _every_token(batch: Any, *_: Any) -> Masks:
    real = batch.attention_mask.numpy()
    return real, np.zeros_like(real)


def _second_copy(batch: Any, *_: Any) -> Masks:
    """The second copy against the first (position 0, the BOS, in neither)."""
    real = batch.attention_mask.numpy()
    second = batch.cache["marked"].numpy() > 0
    first = real & ~second
    first[:, 0] = False
    return second & real, first


def _repeated(loaded: LoadedModel, st: PositionSettings, _: frozenset[int]) -> list[Sample]:
    """Random tokens repeated twice, the second copy marked."""
    probe = repeat_probe(loaded.tokenizer, st.samples, min(st.window, loaded.facts.max_length), st.seed)
    start = 1 if loaded.tokenizer.bos_token_id is not None else 0
    return [replace(s, targets=tuple(range(start + (len(s.input_ids) - start) // 2, len(s.input_ids))))
            for s in probe]


def _unfiltered(loaded: LoadedModel, st: PositionSettings, _: frozenset[int]) -> list[Sample]:
    length = min(st.window, loaded.facts.max_length)
    picked = list(Sampler(loaded.tokenizer, length, seed=st.seed).samples(
        documents(list(st.corpus) if st.corpus else None), st.samples))
    if not picked:
        raise HeadlabError("the corpus produced no samples")
    return picked


def _with_and_without(loaded: LoadedModel, st: PositionSettings, symbol_ids: frozenset[int]) -> list[Sample]:
    """Half the samples with the symbol, half without."""
    docs = documents(list(st.corpus) if st.corpus else None)
    length = min(st.window, loaded.facts.max_length)
    picked = []
    for filt in ("with-target", "without-target"):
        sampler = Sampler(loaded.tokenizer, length, seed=st.seed, target_ids=symbol_ids,
                          target_filter=filt)  # type: ignore[arg-type]
        picked += list(sampler.samples(docs, max(1, st.samples // 2)))
    has = [any(i in symbol_ids for i in s.input_ids) for s in picked]
    if not any(has):
        raise HeadlabError(f"the corpus has no sample with {st.symbol!r}; pass --corpus with such text, or "
                           "--positions all to score every token")
    if all(has):
        raise HeadlabError(f"every sample of the corpus has {st.symbol!r}, but the effect is compared with text "
                           f"without it; pass --corpus with some text without {st.symbol!r}, or --positions all")
    return picked


def _after_words(st: PositionSettings, causal: bool, _: str) -> str:
    return f"targets within {st.k} tokens after a '{st.symbol}'" if causal else f"the '{st.symbol}' positions"


def _marked_words(st: PositionSettings, causal: bool, primary: str) -> str:
    return (f"targets within {st.k} tokens after the marked symbol of the {primary} suite" if causal
            else f"the marked positions of the {primary} suite")


#: ``--positions`` name -> its row
POSITIONS: dict[str, Positions] = {
    "after": Positions(_with_and_without, _near_symbol, _after_words, symbol=True),
    "all": Positions(_unfiltered, _every_token, lambda st, causal, _: "every predicted token" if causal
                     else "every token"),
    "marked": Positions(lambda *_: None, _near_symbol, _marked_words, suites=True),
    "repeat": Positions(_repeated, _second_copy, lambda *_: "the second copy of random tokens repeated twice",
                        part="repeat"),
}
