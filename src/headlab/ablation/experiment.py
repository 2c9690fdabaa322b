"""Group ablation with a matched random control (``headlab ablate``).

Metrics and token sets are those of :mod:`headlab.ablation.metrics` (decoders: loss and accuracy of predicted
tokens; encoders: cosine distance of the final hidden states and of the pooled sentence embedding). Which tokens
are *scored*, and which are the *rest*, is ``positions``, one row of :data:`headlab.ablation.positions.POSITIONS`
(after a symbol, default `/`; all; the marked spans of a stimulus suite; the second copy of repeated tokens).

With ``suites``, each suite's effects are reported as well (near the marked symbol vs the rest of each item).
The control ablates, in each of ``draws`` draws, as many random heads per layer as the target set has there
(never a target head). Reported for the scored tokens, and for the rest where there is one: the target set's
effect, the controls' mean effect, their difference with a bootstrap 95% interval over samples, and a
permutation p-value: the share of control draws whose effect is at least the target set's,
(1 + count) / (1 + draws).
Modes: ``zero``, ``mean`` (each head's mean over all tokens of the experiment's corpus batches) and
``resample`` (each sample gets the head's output on the next sample of its batch, rolled by one).
"""

from __future__ import annotations

import itertools
import math
import random
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import numpy as np
import torch

from headlab.ablation.heads import MODES, ZERO, HeadSet, ablated, parse_heads, record_head_inputs, shared_blocks
from headlab.ablation.metrics import load_for_metric, metric_names, per_sample, reference_hidden, token_metrics
from headlab.ablation.positions import POSITIONS
from headlab.ablation.result import AblateResult
from headlab.census.engine import collate
from headlab.corpus import Sample
from headlab.errors import HeadlabError
from headlab.head import Head
from headlab.models import LoadedModel
from headlab.models.loaded import device_of
from headlab.notices import say
from headlab.probes import SUITES, make_suite, to_samples
from headlab.progress import bar as progress_bar
from headlab.settings import Settings, setting
from headlab.values import ITEM_BYTES, Rule


@dataclass
class Part:
    """Batches measured together: the corpus, or one stimulus suite."""

    name: str
    batches: list[Any]
    stimuli: bool
    base_hidden: list[torch.Tensor] | None = None
    sources: list[dict[int, torch.Tensor]] | None = None  # resample mode: per batch, layer -> (B, T, H, d)
    below: list[Any] | None = None  # per batch, what the last block below every ablated head returned


@dataclass
class Condition:
    """Per part, per-sample means of each metric on near and away tokens: arrays (n_samples,)."""

    near: dict[str, list[np.ndarray]]
    away: dict[str, list[np.ndarray]]


def run_condition(loaded: LoadedModel, parts: list[Part], heads: HeadSet, mode: str, means: dict | None,
                  slash_ids: frozenset[int], k: int, positions: str, first: int = 0) -> Condition:
    """Per-sample metrics with ``heads`` ablated. ``first``: no condition of the experiment ablates below this
    block, so the blocks below it are computed on the first condition and reused (:func:`shared_blocks`)."""
    f = loaded.facts
    masks = POSITIONS[positions].masks
    near: dict[str, list[np.ndarray]] = {}
    away: dict[str, list[np.ndarray]] = {}
    with torch.inference_mode():
        for part in parts:
            rows_n, rows_a = [], []
            if part.below is None:
                part.below = [None] * len(part.batches)
            for i, b in enumerate(part.batches):
                values = part.sources[i] if mode == "resample" and part.sources else means
                with shared_blocks(loaded.model, f.n_layers, first, part.below, i), \
                        ablated(loaded.model, f.n_layers, f.n_heads, heads, mode, values):
                    vals = token_metrics(loaded, b, part.base_hidden[i] if part.base_hidden else None)
                nm, am = masks(b, slash_ids, f.causal, k, part.stimuli)
                rows_n.append([per_sample(v, nm) for v in vals])
                rows_a.append([per_sample(v, am) for v in vals])
            cat = lambda rows: [np.concatenate([r[j] for r in rows]) for j in range(len(rows[0]))]  # noqa: E731
            near[part.name], away[part.name] = cat(rows_n), cat(rows_a)
    return Condition(near, away)


def _record(loaded: LoadedModel, batches: list[Any]) -> list[dict[int, torch.Tensor]]:
    """Per batch, each layer's per-head inputs to the output projection (B, T, H, d)."""
    f = loaded.facts
    out = []
    with torch.inference_mode():
        for b in batches:
            rec: dict[int, torch.Tensor] = {}
            with record_head_inputs(loaded.model, f.n_layers, f.n_heads, rec):
                loaded.model(input_ids=b.input_ids, attention_mask=b.attention_mask.long(),
                             **({"use_cache": False} if f.causal else {}))
            out.append(rec)
    return out


def _means(loaded: LoadedModel, batches: list[Any]) -> dict[int, torch.Tensor]:
    sums: dict[int, torch.Tensor] = {}
    count = 0
    for b, rec in zip(batches, _record(loaded, batches)):
        m = b.attention_mask[:, :, None, None].to(torch.float32)
        for layer, z in rec.items():
            sums[layer] = sums.get(layer, 0) + (z * m).sum((0, 1))
        count += int(b.attention_mask.sum())
    return {layer: s / count for layer, s in sums.items()}


def _resample_sources(loaded: LoadedModel, batches: list[Any]) -> list[dict[int, torch.Tensor]]:
    if any(len(b.input_ids) < 2 for b in batches):
        raise HeadlabError("resample mode needs at least 2 samples per batch (--batch-size)")
    return [{layer: z.roll(1, dims=0) for layer, z in rec.items()} for rec in _record(loaded, batches)]


def matched_control(heads: HeadSet, n_heads: int, rng: random.Random) -> dict[int, list[int]]:
    """As many random heads per layer as ``heads`` has there, never one of ``heads``."""
    out = {}
    for layer, hs in heads.items():
        pool = [h for h in range(n_heads) if h not in set(hs)]
        if len(pool) < len(set(hs)):
            raise HeadlabError(f"layer {layer}: not enough other heads for a matched control")
        out[layer] = rng.sample(pool, len(set(hs)))
    return out


def matched_controls(heads: HeadSet, n_heads: int, draws: int, rng: random.Random) -> list[dict[int, list[int]]]:
    """Up to ``draws`` distinct matched control sets (each :func:`matched_control`'s), drawn without replacement: a
    set drawn twice would count one control twice and narrow the interval and the p-value it gives. Where fewer
    distinct sets exist, every one of them, in a random order (the p-value cannot then go below 1/(sets + 1));
    refused where a layer has too few other heads for any."""
    pools = {l: [h for h in range(n_heads) if h not in set(hs)] for l, hs in heads.items()}
    sizes = {l: len(set(hs)) for l, hs in heads.items()}
    for l, pool in pools.items():
        if len(pool) < sizes[l]:
            raise HeadlabError(f"layer {l}: not enough other heads for a matched control")
    if math.prod(math.comb(len(pools[l]), sizes[l]) for l in pools) <= draws:
        every = [dict(zip(pools, map(list, pick)))
                 for pick in itertools.product(*(itertools.combinations(pools[l], sizes[l]) for l in pools))]
        rng.shuffle(every)
        return every
    seen: set[tuple[tuple[int, tuple[int, ...]], ...]] = set()
    out = []
    while len(out) < draws:
        pick = matched_control(heads, n_heads, rng)
        key = tuple((l, tuple(sorted(hs))) for l, hs in sorted(pick.items()))
        if key not in seen:
            seen.add(key)
            out.append(pick)
    return out


def _batched(loaded: LoadedModel, name: str, samples: Sequence[Sample], batch_size: int, stimuli: bool) -> Part:
    dev = device_of(loaded.model)
    return Part(name, [collate(samples[i:i + batch_size], loaded.pad_id, loaded.facts.causal, dev)
                       for i in range(0, len(samples), batch_size)], stimuli=stimuli)


def _suite_part(loaded: LoadedModel, suite: str, n: int, seed: int, batch_size: int) -> Part:
    opts = {"tokenizer": loaded.tokenizer} if suite == "contexts" else {}
    samples = to_samples(make_suite(suite, n, seed, **opts), loaded.tokenizer, loaded.facts.max_length)
    return _batched(loaded, suite, samples, batch_size, stimuli=True)


@dataclass(frozen=True)
class AblateSettings(Settings):
    """How ``headlab ablate`` measures: the ablation ``mode``; ``draws`` matched random head sets; which tokens
    are scored (``positions``, ``symbol``, ``k``); ``samples`` corpus windows of ``window`` tokens from ``corpus``
    (None: the default sources); stimulus ``suites`` with ``suite_n`` items each; ``seed``, ``batch_size``."""

    FAMILY: ClassVar[str] = "ablate"
    LISTS: ClassVar[tuple[str, ...]] = ("corpus", "suites")

    mode: str = setting(ZERO, "zero; mean (each head's mean output over the corpus samples); resample (the "
                        "head's output on the next sample of the batch)", choices=MODES)
    draws: int = setting(20, "matched random head sets the target is compared with (p cannot go below "
                         "1/(draws+1))", rule=Rule("whole", 1, each=ITEM_BYTES))
    stop_after: int | None = setting(None, "stop drawing once this many control sets change the metric at least as "
                                     "much as the target (Besag-Clifford's sequential p: that count over the sets "
                                     "drawn; a head like the random ones stops early); default: every draw",
                                     rule=Rule("whole", 1, optional=True))
    positions: str = setting("after", "the tokens scored: after (within --within tokens after --symbol, against "
                             "samples without it), all (every token of any corpus), marked (the marked spans of the "
                             "first --suites suite, against the items' other tokens), repeat (the second copy of "
                             "random tokens repeated twice, against the first: induction)", choices=tuple(POSITIONS))
    symbol: str = setting("/", "the symbol --positions after scores after (every token whose text holds it)")
    samples: int = setting(48, "corpus windows (--positions after: half with the symbol, half without)",
                           rule=Rule("whole", 2))
    window: int = setting(64, "tokens per sample")
    k: int = setting(3, "decoders: score the targets within this many tokens after the symbol", flag="within",
                     rule=Rule("whole", 1))
    corpus: tuple[str, ...] | None = setting(None, "named sources or files/folders (default: wiki pydoc)",
                                             metavar="SRC", paths=True, annotation="Sequence[str] | None")
    suites: tuple[str, ...] = setting((), "also measure on these stimulus suites, e.g. slash controls positions "
                                      "contexts (default: none)", choices=sorted(SUITES),
                                      annotation="Sequence[str]")
    suite_n: int = setting(16, "items per stimulus suite")
    seed: int = setting(0, "random seed (sample order, draws)")
    batch_size: int = setting(8, "samples per forward pass")


#: ablate given no options
ABLATE = AblateSettings()


def ablate_experiment(model: str | LoadedModel, heads: str | Sequence[str], settings: AblateSettings = ABLATE, *,
                      progress: bool, device: str, dtype: str) -> AblateResult:
    """Ablate ``heads`` together and ``settings.draws`` matched random sets; return the ``ablate.json`` record.

    ``settings.suites`` (names of :data:`headlab.probes.SUITES`) adds per-suite effects."""
    st = settings
    loaded = load_for_metric(model, device, dtype)
    f = loaded.facts
    target = parse_heads(heads, f.n_layers, f.n_heads)
    if not target:
        raise HeadlabError("no heads to ablate (--heads L.H,...)")
    way = POSITIONS[st.positions]
    if way.suites and not st.suites:
        raise HeadlabError(f"--positions {st.positions} scores the marked spans of stimulus suites: pass --suites "
                           "(e.g. --suites slash)")
    if not st.symbol:
        raise HeadlabError("--symbol '': give the text whose tokens --positions after scores after, e.g. --symbol /")
    symbol_ids = loaded.ids_containing(st.symbol)
    if way.symbol and not symbol_ids:
        raise HeadlabError(f"--symbol {st.symbol!r}: no token of {loaded.name}'s vocabulary holds it")
    samples = way.samples(loaded, st, symbol_ids)
    parts = [] if samples is None else [_batched(loaded, way.part, samples, st.batch_size,
                                                 stimuli=way.part != "corpus")]
    parts += [_suite_part(loaded, s, st.suite_n, st.seed, st.batch_size) for s in st.suites]
    means = _means(loaded, parts[0].batches) if st.mode == "mean" else None
    for part in parts:
        part.base_hidden = reference_hidden(loaded, part.batches)
        if st.mode == "resample":
            part.sources = _resample_sources(loaded, part.batches)
    sets = matched_controls(target, f.n_heads, st.draws, random.Random(st.seed))
    if len(sets) < st.draws:
        named = ", ".join(str(Head(l, h)) for l, hs in sorted(target.items()) for h in hs)
        say(f"ablate: only {len(sets)} distinct matched control sets exist for {named} (--draws {st.draws}); each "
            f"is run once, so p cannot go below 1/{len(sets) + 1}")
    conds = itertools.chain([("base", {}), ("target", target)], ((f"control{i}", c) for i, c in enumerate(sets)))
    first = min(l for l, hs in target.items() if hs)  # every control is matched by layer: none ablates lower
    bar = progress_bar(2 + len(sets), f"ablate {loaded.name}", "condition", progress)
    res: dict[str, Condition] = {}
    for name, hs in conds:
        res[name] = run_condition(loaded, parts, hs, st.mode, means, symbol_ids, st.k, st.positions, first)
        if bar is not None:
            bar.update(1)
        if st.stop_after is not None and _reached(res, parts[0].name, f.causal) >= st.stop_after:
            break
    if bar is not None:
        bar.close()
    return _report(loaded, target, st, res, parts)


def _changes(res: dict[str, Condition], side: str, part: str, causal: bool) -> tuple[float, np.ndarray]:
    """The target's mean change of the primary metric and each control set's drawn so far, (draws,)."""
    tgt = getattr(res["target"], side)[part][0]
    base = getattr(res["base"], side)[part][0] if causal else np.zeros_like(tgt)
    ctrl = [getattr(r, side)[part][0] for c, r in res.items() if c.startswith("control")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no scored token: NaN, which reaches nothing
        d_c = np.array([np.nanmean(c - base) for c in ctrl])
        return float(np.nanmean(tgt - base)), d_c


def _reached(res: dict[str, Condition], part: str, causal: bool) -> int:
    """How many control sets drawn so far change the primary metric at least as much as the target."""
    if "target" not in res:
        return 0
    d_t, d_c = _changes(res, "near", part, causal)
    return int((d_c >= d_t).sum())


def _boot_diff(a: np.ndarray, b: np.ndarray, rng: np.random.Generator, n_boot: int = 1000) -> tuple[float, float]:
    """95% bootstrap interval over samples of mean(a) − mean(b), a and b paired (n,) or (draws, n)."""

    n = a.shape[-1]
    boots = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample may hold only NaN samples: skipped
        for _ in range(n_boot):
            idx = rng.integers(0, n, n)
            boots.append(np.nanmean(a[..., idx]) - np.nanmean(b[..., idx]))
        lo, hi = np.nanpercentile(boots, [2.5, 97.5])
    return float(lo), float(hi)


def _blocks(res: dict[str, Condition], side: str, part: str, names: Sequence[str], causal: bool,
            rng: np.random.Generator) -> dict[str, Any]:
    out = {}
    for j, m in enumerate(names):
        per = {c: getattr(r, side)[part][j] for c, r in res.items()}
        base = per["base"] if causal else np.zeros_like(per["target"])
        b, abl = float(np.nanmean(base)), float(np.nanmean(per["target"]))
        row: dict[str, Any] = {"base": b, "ablated": abl, "delta": abl - b}
        if m == "accuracy":  # the claims table needs the drop in points with its interval
            lo, hi = _boot_diff(per["target"], base, rng)
            row.update(delta_points=100 * (abl - b), interval_points=[100 * lo, 100 * hi])
        ctrl = np.stack([per[c] for c in per if c.startswith("control")])
        row["control_delta_mean"] = float(np.nanmean(ctrl - base[None]))
        out[m] = row
    return out


def _control(res: dict[str, Condition], side: str, part: str, stop_after: int | None, causal: bool,
             rng: np.random.Generator) -> dict[str, Any] | None:
    """The target set against its matched controls on the primary metric of one token set; None if it is
    empty. ``stop_after``: the draws stopped once that many sets reached the target (Besag-Clifford)."""
    tgt = getattr(res["target"], side)[part][0]
    if not np.isfinite(tgt).any():
        return None
    ctrl = np.stack([getattr(r, side)[part][0] for c, r in res.items() if c.startswith("control")])
    base = getattr(res["base"], side)[part][0] if causal else np.zeros_like(tgt)
    d_t, d_c = _changes(res, side, part, causal)
    draws, above, below = len(d_c), int((d_c >= d_t).sum()), int((d_c <= d_t).sum())
    lo, hi = _boot_diff(tgt - base, ctrl - base[None], rng)
    stopped = stop_after is not None and above >= stop_after
    p = above / draws if stopped else (1 + above) / (1 + draws)
    return {"draws": draws, "matched": "same number of random heads per layer, never a target head",
            "delta_target": d_t, "delta_mean": float(np.mean(d_c)), "difference": float(d_t - np.mean(d_c)),
            "interval": [lo, hi], "p_value": p, "p_two_sided": min(1.0, 2 * min(p, (1 + below) / (1 + draws))),
            "sequential": ({"stop_after": stop_after, "stopped": stopped} if stop_after is not None else None),
            "per_set": [float(x) for x in d_c]}  # each control set's mean change: the p-value from the file alone


def _report(loaded: LoadedModel, target: HeadSet, st: AblateSettings, res: dict[str, Condition],
            parts: list[Part]) -> AblateResult:
    causal = loaded.facts.causal
    names = metric_names(loaded)
    rng = np.random.default_rng(0)
    primary = parts[0].name
    control = _control(res, "near", primary, st.stop_after, causal, rng)
    if control is None:
        raise HeadlabError(f"no token of {primary} was scored under --positions {st.positions}")
    rest = _control(res, "away", primary, None, causal, rng)
    suites = {part.name: {"near": _blocks(res, "near", part.name, names, causal, rng),
                          "away": _blocks(res, "away", part.name, names, causal, rng),
                          "n_items": int(sum(len(b.input_ids) for b in part.batches))}
              for part in parts if part.name in st.suites}
    return AblateResult(
        model=loaded.name, mode=st.mode, heads=[Head(l, h) for l, hs in sorted(target.items()) for h in hs],
        metric=names[0], metrics=list(names), scored_definition=POSITIONS[st.positions].words(st, causal, primary),
        scored=_blocks(res, "near", primary, names, causal, rng),
        rest=_blocks(res, "away", primary, names, causal, rng) if rest is not None else {},
        control=control, suites=suites, n_samples=len(res["target"].near[primary][0]),
        n_tokens=int(sum(int(b.attention_mask.sum()) for b in parts[0].batches)),
        positions=st.positions, symbol=st.symbol, rest_control=rest,
    )
