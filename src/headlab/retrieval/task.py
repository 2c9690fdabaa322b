"""The retrieval problem (Musat, ICLR 2025): follow a chain of references hidden among distractor chains.

A *chain* of depth D is D links ending in a value: x_1 = v, x_2 = x_1, ..., x_D = x_{D-1}; the question asks
for x_D and the answer is v (D lookups). ``n_distractors`` more chains of the same depth use other variables
and other values. The paper's exact formats are not public; these are ours:

* ``minimal`` — tokens: ``<bos>`` then the 2·D·(1+n_distractors) link tokens as (variable, reference) pairs,
  pairs shuffled, then ``<query>`` x_D; the answer is the value token. Token ids (:class:`MinimalVocab`):
  0 ``<pad>``, 1 ``<bos>``, 2 ``<query>``, 3 ``<sep>``, then ``n_vars`` variables, then ``n_values`` values.
* ``assign`` — text: ``"A = 7. B = A. ... What is the value of D?"``, answer ``"7"``.
* ``relatives`` — the conditional text form: ``"Ann lives in Paris. Bob's mother is Ann. Bob is a wizard.
  ... Wizards live with their mothers. Pirates live on ships. Where does Eve live?"``; each hop needs the
  mother link *and* the wizard fact; distractor people are wizards too (their chains end elsewhere), plus
  pirates whose facts are irrelevant.
* ``assign-mc`` / ``relatives-mc`` — the same with 4 options (the answer and 3 other chains' values, shuffled;
  25% chance): the prompt ends with ``"Options: A) 7 B) 3 C) 9 D) 1. Answer:"`` and the answer is a letter.

Every generated example is checked by an independent solver (:func:`solve`) that parses the prompt (or the
tokens) from scratch and follows the references.

What a run is trained on: :class:`RetrievalTask` (this problem, under a curriculum) or :class:`KHopTask` (the
k-hop induction task of :mod:`headlab.retrieval.khop`), each recorded in the run's ``task.json``.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import asdict, dataclass
from typing import Any, Iterator

from headlab.errors import HeadlabError
from headlab.retrieval.settings import CURRICULA, DECODER

FORMS = ("minimal", "assign", "relatives", "assign-mc", "relatives-mc")
NAMES = ("Ann", "Bob", "Cara", "Dan", "Eve", "Finn", "Gia", "Hal", "Ida", "Jon", "Kim", "Leo", "Mia", "Ned",
         "Ola", "Pat", "Quin", "Rae", "Sam", "Tia", "Uma", "Vic", "Wes", "Xia", "Yan", "Zoe", "Abe", "Bea", "Cy",
         "Dee", "Eli", "Fay", "Gus", "Hope", "Ike", "Joy", "Kai", "Liv", "Max", "Nia")
PLACES = ("Paris", "Oslo", "Lima", "Cairo", "Delhi", "Quito", "Rome", "Seoul", "Tokyo", "Accra", "Bern", "Dakar",
          "Hanoi", "Kyiv", "Lagos", "Minsk", "Nairobi", "Riga", "Sofia", "Tunis")
LETTERS = "ABCD"


@dataclass(frozen=True)
class MinimalVocab:
    n_vars: int = 24
    n_values: int = 10
    PAD, BOS, QUERY, SEP = 0, 1, 2, 3

    @property
    def size(self) -> int:
        return 4 + self.n_vars + self.n_values

    def var(self, i: int) -> int:
        return 4 + i

    def value(self, i: int) -> int:
        return 4 + self.n_vars + i

    def is_var(self, t: int) -> bool:
        return 4 <= t < 4 + self.n_vars

    def is_value(self, t: int) -> bool:
        return 4 + self.n_vars <= t < self.size


def _chains(
    depth: int, n_chains: int, n_vars: int, n_values: int, rng: random.Random
) -> tuple[list[list[int]], list[int]]:
    if depth < 1:
        raise HeadlabError("depth must be at least 1")
    if depth * n_chains > n_vars:
        raise HeadlabError(f"{n_chains} chains of depth {depth} need {depth * n_chains} variables; only {n_vars}")
    if n_chains > n_values:
        raise HeadlabError(f"{n_chains} chains need {n_chains} distinct values; only {n_values}")
    vars_ = rng.sample(range(n_vars), depth * n_chains)
    vals = rng.sample(range(n_values), n_chains)
    return [vars_[c * depth : (c + 1) * depth] for c in range(n_chains)], vals


def _link_order(chains: list[list[int]], shuffle: bool, rng: random.Random,
                definitions_first: bool = False) -> list[tuple[int, int]]:
    """(chain, position) of every link, in prompt order. ``definitions_first``: the chains interleaved at
    random, each in its own order, so that every variable is defined before it is used."""
    if definitions_first:
        left = [len(c) for c in chains]
        order = []
        while any(left):
            c = rng.choice([i for i, n in enumerate(left) if n])
            order.append((c, len(chains[c]) - left[c]))
            left[c] -= 1
        return order
    order = [(c, k) for c in range(len(chains)) for k in range(len(chains[c]))]
    if shuffle:
        rng.shuffle(order)
    return order


def minimal(
    depth: int,
    rng: random.Random,
    *,
    n_distractors: int = 2,
    vocab: MinimalVocab = MinimalVocab(),
    shuffle: bool = True,
    query_depth: int | None = None,
    separator: bool = DECODER.separator,
    definitions_first: bool = False,
) -> dict[str, Any]:
    """One ``minimal`` example: ``tokens`` (prompt, ending with the queried variable), ``answer`` (value token)
    and ``chain`` (the tokens from the queried variable's reference to the value: the full-chain target).

    ``separator``: a ``<sep>`` after every pair, so that a pair's variable is the only token right after
    ``<sep>`` (without it, the token after a reference is the next pair's variable, and a lookup must tell
    the two apart by position parity). ``definitions_first``: every variable defined before its use (the
    chains interleaved at random), so that each pair's variable can be resolved where its reference is read;
    ``dense`` lists, per pair, the position of its reference, the resolved value of its variable and the hops
    that takes (its place in the chain, from 1: a copy of the value)."""
    chains, vals = _chains(depth, 1 + n_distractors, vocab.n_vars, vocab.n_values, rng)
    q = depth if query_depth is None else query_depth
    toks = [vocab.BOS]
    dense = []
    for c, k in _link_order(chains, shuffle, rng, definitions_first):
        ref = vocab.value(vals[c]) if k == 0 else vocab.var(chains[c][k - 1])
        dense.append((len(toks) + 1, vocab.value(vals[c]), k + 1))
        toks += [vocab.var(chains[c][k]), ref] + ([vocab.SEP] if separator else [])
    toks += [vocab.QUERY, vocab.var(chains[0][q - 1])]
    chain = [vocab.var(chains[0][k]) for k in range(q - 2, -1, -1)] + [vocab.value(vals[0])]
    return {"form": "minimal", "depth": q, "tokens": toks, "answer": vocab.value(vals[0]), "chain": chain,
            "dense": dense}


def _var_names(n: int) -> list[str]:
    single = list(string.ascii_uppercase)
    return single + [a + b for a in single for b in single][: max(0, n - 26)]


def assign(
    depth: int,
    rng: random.Random,
    *,
    n_distractors: int = 2,
    n_vars: int = 26,
    n_values: int = 10,
    shuffle: bool = True,
    choices: bool = False,
) -> dict[str, Any]:
    names = _var_names(n_vars)
    chains, vals = _chains(depth, 1 + n_distractors, n_vars, n_values, rng)
    facts = []
    for c, k in _link_order(chains, shuffle, rng):
        ref = str(vals[c]) if k == 0 else names[chains[c][k - 1]]
        facts.append(f"{names[chains[c][k]]} = {ref}.")
    prompt = " ".join(facts) + f" What is the value of {names[chains[0][-1]]}?"
    cast = {"path": [names[v] for v in chains[0]], "names": [names[v] for c in chains for v in c]}
    return _finish("assign", depth, prompt, str(vals[0]), [str(v) for v in vals[1:]], choices, rng, cast)


def relatives(
    depth: int,
    rng: random.Random,
    *,
    n_distractors: int = 2,
    shuffle: bool = True,
    choices: bool = False,
    n_pirates: int = 2,
) -> dict[str, Any]:
    n_chains = 1 + n_distractors
    if depth * n_chains + n_pirates > len(NAMES):
        raise HeadlabError(f"relatives: {depth * n_chains + n_pirates} people needed, {len(NAMES)} names available")
    people = rng.sample(NAMES, depth * n_chains + n_pirates)
    places = rng.sample(PLACES, n_chains + n_pirates)
    chains = [people[c * depth : (c + 1) * depth] for c in range(n_chains)]
    facts = []
    for c in range(n_chains):
        facts.append(f"{chains[c][0]} lives in {places[c]}.")
        for k in range(1, depth):
            facts.append(f"{chains[c][k]}'s mother is {chains[c][k - 1]}.")
            facts.append(f"{chains[c][k]} is a wizard.")
    for i, p in enumerate(people[depth * n_chains :]):
        facts.append(f"{p} is a pirate.")
        facts.append(f"{p}'s mother is {chains[i % n_chains][0]}.")  # pirates do not follow the wizard rule
    if shuffle:
        rng.shuffle(facts)
    prompt = (
        " ".join(facts + ["Wizards live with their mothers.", "Pirates live on ships."])
        + f" Where does {chains[0][-1]} live?"
    )
    cast = {"path": list(chains[0]), "names": list(people)}
    return _finish("relatives", depth, prompt, places[0], list(places[1:n_chains]), choices, rng, cast)


def _finish(form: str, depth: int, prompt: str, answer: str, others: list[str], choices: bool, rng: random.Random,
            cast: dict[str, list[str]]) -> dict[str, Any]:
    """The example; ``ends`` (the distractor chains' ends), ``path`` (the queried chain's variables, first
    link first) and ``names`` (every variable in the prompt) let a continuation's failure be classified."""
    if not choices:
        return {"form": form, "depth": depth, "prompt": prompt, "answer": answer, "ends": others, **cast}
    pool = list(dict.fromkeys(others))
    extra = [str(x) for x in range(10)] if form.startswith("assign") else list(PLACES)
    while len(pool) < 3:
        cand = rng.choice(extra)
        if cand != answer and cand not in pool:
            pool.append(cand)
    opts = rng.sample(pool, 3) + [answer]
    rng.shuffle(opts)
    letter = LETTERS[opts.index(answer)]
    prompt += " Options: " + " ".join(f"{LETTERS[i]}) {o}" for i, o in enumerate(opts)) + ". Answer:"
    return {"form": f"{form}-mc", "depth": depth, "prompt": prompt, "answer": letter, "choices": opts,
            "answer_text": answer, "ends": others, **cast}


def generate(form: str, depth: int, n: int, seed: int, **options: Any) -> Iterator[dict[str, Any]]:
    """``n`` seeded examples of ``form``, each checked by :func:`solve` (a mismatch is a bug: raises)."""
    if form not in FORMS:
        raise HeadlabError(f"unknown form {form!r}; known: {', '.join(FORMS)}")
    rng = random.Random(f"{form}:{depth}:{seed}")
    for _ in range(n):
        if form == "minimal":
            ex = minimal(depth, rng, **options)
        elif form.startswith("assign"):
            ex = assign(depth, rng, choices=form.endswith("-mc"), **options)
        else:
            ex = relatives(depth, rng, choices=form.endswith("-mc"), **options)
        got = solve(ex, **({"vocab": options["vocab"]} if "vocab" in options else {}))
        if got != ex["answer"]:
            raise AssertionError(f"generator/solver disagree on {ex}: solver says {got!r}")
        if options.get("definitions_first") and solve_dense(ex, options.get("vocab", MinimalVocab())) != ex["dense"]:
            raise AssertionError(f"generator/solver disagree on the dense targets of {ex}")
        yield ex


# -- the independent solver ------------------------------------------------------------------------------------
def _follow(links: dict[str, str], start: str, is_terminal: Any) -> str:
    seen, cur = set(), start
    while not is_terminal(cur):
        if cur in seen or cur not in links:
            raise HeadlabError(f"reference chain from {start!r} is broken at {cur!r}")
        seen.add(cur)
        cur = links[cur]
    return cur


def solve_dense(ex: dict[str, Any], vocab: MinimalVocab = MinimalVocab()) -> list[tuple[int, int, int]]:
    """Every reference position of a ``minimal`` prompt with the resolved value of its pair's variable and the
    hops it takes, from the tokens alone, reading left to right as a causal model must: a reference to a
    variable not yet defined is an error (the dense targets need definitions first)."""
    toks = ex["tokens"][:-2]
    step = 3 if vocab.SEP in toks else 2
    value: dict[int, tuple[int, int]] = {}  # variable -> (its value, hops)
    out = []
    for i in range(1, len(toks), step):
        var, ref = toks[i], toks[i + 1]
        if vocab.is_value(ref):
            value[var] = (ref, 1)
        elif ref in value:
            value[var] = (value[ref][0], value[ref][1] + 1)
        else:
            raise HeadlabError(f"position {i + 1}: variable {ref} is used before it is defined")
        out.append((i + 1, *value[var]))
    return out


def solve(ex: dict[str, Any], vocab: MinimalVocab = MinimalVocab()) -> Any:
    """The answer of an example, computed from its prompt or tokens alone."""
    form = ex["form"]
    if form == "minimal":
        toks = ex["tokens"]
        if toks[-2] != vocab.QUERY:
            raise HeadlabError("minimal example does not end with <query> VARIABLE")
        body = [t for t in toks[1:-2] if t != vocab.SEP]
        links = {str(body[i]): str(body[i + 1]) for i in range(0, len(body), 2)}
        return int(_follow(links, str(toks[-1]), lambda t: vocab.is_value(int(t))))
    prompt = ex["prompt"]
    main, _, opts = prompt.partition(" Options: ")
    if form.startswith("assign"):
        links = dict(re.findall(r"(\w+) = (\w+)\.", main))
        target = re.search(r"What is the value of (\w+)\?", main).group(1)  # type: ignore[union-attr]
        answer = _follow(links, target, lambda t: t.isdigit())
    else:
        home = dict(re.findall(r"(\w+) lives in (\w+)\.", main))
        mother = dict(re.findall(r"(\w+)'s mother is (\w+)\.", main))
        wizards = set(re.findall(r"(\w+) is a wizard\.", main))
        target = re.search(r"Where does (\w+) live\?", main).group(1)  # type: ignore[union-attr]
        cur, seen = target, set()
        while cur not in home:
            if cur in seen or cur not in wizards or cur not in mother:
                raise HeadlabError(f"cannot resolve where {target} lives")
            seen.add(cur)
            cur = mother[cur]
        answer = home[cur]
    if form.endswith("-mc"):
        options = re.findall(r"([ABCD])\) (\w+)", opts)
        return next(letter for letter, text in options if text == answer)
    return answer


@dataclass
class RetrievalTask:
    depth: int
    curriculum: str = "chain"
    n_distractors: int = 2
    n_vars: int = 24
    n_values: int = 10
    shuffle: bool = True
    separator: bool = False  # a <sep> token after every (variable, reference) pair
    # Training chains' depth, drawn per batch from min_depth..depth (None: always depth); held-out sets stay at
    # every depth of full-length chains, so short chains only shape what the model learns.
    min_depth: int | None = None

    def __post_init__(self) -> None:
        if self.curriculum not in CURRICULA:
            raise HeadlabError(f"unknown curriculum {self.curriculum!r}; known: {', '.join(CURRICULA)}")
        if self.min_depth is not None and not 1 <= self.min_depth <= self.depth:
            raise HeadlabError(f"--min-depth {self.min_depth}: must lie in 1..{self.depth} (the depth)")

    @property
    def vocab(self) -> MinimalVocab:
        return MinimalVocab(self.n_vars, self.n_values)

    @property
    def max_length(self) -> int:
        return 1 + (3 if self.separator else 2) * self.depth * (1 + self.n_distractors) + 2 + self.depth

    def example(self, rng: random.Random, query_depth: int | None = None, depth: int | None = None
                ) -> dict[str, Any]:
        return minimal(depth or self.depth, rng, n_distractors=self.n_distractors, vocab=self.vocab,
                       shuffle=self.shuffle, query_depth=query_depth, separator=self.separator,
                       definitions_first=self.curriculum == "dense")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class KHopTask:
    max_hops: int = 16
    seq_len: int = 100
    n_chars: int = 4

    def __post_init__(self) -> None:
        # every hop lands at least one position earlier, so past seq_len - 1 hops every target is "none"
        if not 1 <= self.max_hops <= self.seq_len - 1:
            raise HeadlabError(f"--depth {self.max_hops}: k-hop sequences of {self.seq_len} characters hold hop "
                               f"counts 1..{self.seq_len - 1}")

    # token ids: hop counts 0..max_hops, then the characters, then "none" and "blank" (their order)
    @property
    def vocab_size(self) -> int:
        return self.max_hops + 1 + self.n_chars + 2

    @property
    def none(self) -> int:
        return self.max_hops + 1 + self.n_chars

    @property
    def blank(self) -> int:
        return self.none + 1

    @property
    def max_length(self) -> int:
        return self.seq_len

    def char(self, c: int) -> int:
        return self.max_hops + 1 + c

    def to_json(self) -> dict[str, Any]:
        return {"task": "khop", **asdict(self)}
