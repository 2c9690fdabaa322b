"""Group ablation with a matched random control (``headlab ablate``).

Metrics and token sets are those of :mod:`headlab.ablation.metrics` (decoders: loss and accuracy of targets
within ``k`` tokens after a `/`; encoders: cosine distance of the final hidden states at `/` positions and of
the pooled sentence embedding). Measured on corpus text (half the samples with `/`, half without) and, with
``suites``, on the constructed stimulus suites of the characterization work (near the marked symbol vs the
rest of each item).
The control ablates, in each of ``draws`` draws, as many random heads per layer as the target set has there
(never a target head). Reported: the target set's effect, the controls' mean effect, their difference with a
bootstrap 95% interval over samples, and a permutation p-value: the share of control draws whose effect on
slash tokens is at least the target set's, (1 + count) / (1 + draws).
Modes: ``zero``, ``mean`` (each head's mean over all tokens of the experiment's corpus batches) and
``resample`` (each sample gets the head's output on the next sample of its batch, rolled by one).
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np
import torch

from headlab.ablation.heads import MODES, HeadSet, ablated, parse_heads, record_head_inputs
from headlab.ablation.metrics import (
    load_for_metric,
    metric_names,
    per_sample,
    reference_hidden,
    symbol_mask,
    token_metrics,
    token_sets,
)
from headlab.census.engine import collate
from headlab.corpus import Sample, Sampler, documents
from headlab.errors import HeadlabError
from headlab.head import Head
from headlab.models import LoadedModel
from headlab.models.loaded import device_of
from headlab.probes import SUITES, make_suite, to_samples
from headlab.progress import bar as progress_bar
from headlab.result import Result
from headlab.settings import Settings, setting
from headlab.values import Rule


@dataclass
class Part:
    """Batches measured together: the corpus, or one stimulus suite."""

    name: str
    batches: list[Any]
    stimuli: bool
    base_hidden: list[torch.Tensor] | None = None
    sources: list[dict[int, torch.Tensor]] | None = None  # resample mode: per batch, layer -> (B, T, H, d)


@dataclass
class Condition:
    """Per part, per-sample means of each metric on near and away tokens: arrays (n_samples,)."""

    near: dict[str, list[np.ndarray]]
    away: dict[str, list[np.ndarray]]


def run_condition(loaded: LoadedModel, parts: list[Part], heads: HeadSet, mode: str, means: dict | None,
                  slash_ids: frozenset[int], k: int) -> Condition:
    f = loaded.facts
    near: dict[str, list[np.ndarray]] = {}
    away: dict[str, list[np.ndarray]] = {}
    with torch.inference_mode():
        for part in parts:
            rows_n, rows_a = [], []
            for i, b in enumerate(part.batches):
                values = part.sources[i] if mode == "resample" and part.sources else means
                with ablated(loaded.model, f.n_layers, f.n_heads, heads, mode, values):
                    vals = token_metrics(loaded, b, part.base_hidden[i] if part.base_hidden else None)
                nm, am = token_sets(b, symbol_mask(b, slash_ids), f.causal, k, part.stimuli)
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


def _suite_part(loaded: LoadedModel, suite: str, n: int, seed: int, batch_size: int) -> Part:
    opts = {"tokenizer": loaded.tokenizer} if suite == "contexts" else {}
    samples = to_samples(make_suite(suite, n, seed, **opts), loaded.tokenizer, loaded.facts.max_length)
    dev = device_of(loaded.model)
    return Part(suite, [collate(samples[i:i + batch_size], loaded.pad_id, loaded.facts.causal, dev)
                        for i in range(0, len(samples), batch_size)], stimuli=True)


@dataclass
class AblateResult(Result):
    """``ablate.json``: the target set's effect and its matched random controls (schema: docs/ablation.md)."""

    KIND = "ablate.json"
    model: str
    mode: str
    heads: list[Head]
    metric: str
    metrics: list[str]
    slash_definition: str
    slash: dict[str, Any]
    no_slash: dict[str, Any]
    control: dict[str, Any]
    suites: dict[str, Any]
    n_samples: int
    n_tokens: int

    def markdown(self) -> str:
        """The effect per text part and metric, then the target against its matched controls with the
        interval and p-value."""
        c = self.control
        lines = [f"**{self.model}**: {self.mode}-ablating {', '.join(map(str, self.heads))}; {self.n_samples} "
                 f"samples, {self.n_tokens} tokens; slash = {self.slash_definition}", "",
                 "| part | metric | base | ablated | Δ | controls' mean Δ |", "|---|---|---|---|---|---|"]
        for r in self.records():
            lines.append(f"| {r['part']} | {r['metric']} | {r['base']:.4f} | {r['ablated']:.4f} | {r['delta']:+.4f} | "
                         f"{r['control_delta_mean']:+.4f} |")
        lines += ["", f"Target minus {c['draws']} matched random sets ({self.metric} on slash tokens): "
                  f"**{c['difference']:+.4f}** [{c['interval'][0]:+.4f}, {c['interval'][1]:+.4f}] (95%), "
                  f"permutation p = {c['p_value']:.3f}."]
        return "\n".join(lines) + "\n"

    def records(self) -> list[dict[str, Any]]:
        """One row per (text part, metric): base, ablated, the change and the controls' mean change."""
        parts = [("slash", self.slash), ("no_slash", self.no_slash)]
        parts += [(f"suite {s}", v["near"]) for s, v in self.suites.items()]
        return [{"part": part, "metric": name, **{k: v for k, v in values.items() if not isinstance(v, list)}}
                for part, block in parts for name, values in block.items()]


@dataclass(frozen=True)
class AblateSettings(Settings):
    """How ``headlab ablate`` measures: the ablation ``mode``; ``draws`` matched random head sets; ``samples``
    corpus windows of ``window`` tokens (half with ``/``) from ``corpus`` (None: the default sources), accuracy
    at top-``k``; stimulus ``suites`` with ``suite_n`` items each; ``seed``, ``batch_size``."""

    FAMILY: ClassVar[str] = "ablate"
    LISTS: ClassVar[tuple[str, ...]] = ("corpus", "suites")

    mode: str = setting("zero", "zero; mean (each head's mean output over the corpus samples); resample (the "
                        "head's output on the next sample of the batch)", choices=MODES)
    draws: int = setting(20, "matched random head sets the target is compared with (p cannot go below "
                         "1/(draws+1))", rule=Rule("whole", 1))
    samples: int = setting(48, "corpus windows, half with '/', half without", rule=Rule("whole", 2))
    window: int = setting(64, "tokens per sample")
    k: int = setting(3, "accuracy at top-k", cli=False)
    corpus: tuple[str, ...] | None = setting(None, "named sources or files/folders (default: wiki pydoc)",
                                             metavar="SRC", annotation="Sequence[str] | None")
    suites: tuple[str, ...] = setting((), "also measure on these stimulus suites, e.g. slash controls positions "
                                      "contexts (default: none)", choices=sorted(SUITES),
                                      annotation="Sequence[str]")
    suite_n: int = setting(16, "items per stimulus suite")
    seed: int = setting(0, "random seed (sample order, draws)")
    batch_size: int = setting(8, "samples per forward pass")


#: ablate given no options
ABLATE = AblateSettings()


def ablate_experiment(model: str | LoadedModel, heads: str | Sequence[str], settings: AblateSettings = ABLATE, *,
                      progress: bool = True, device: str = "cpu", dtype: str = "float32") -> AblateResult:
    """Ablate ``heads`` together and ``settings.draws`` matched random sets; return the ``ablate.json`` record.

    ``settings.suites`` (names of :data:`headlab.probes.SUITES`) adds per-suite effects."""
    st = settings
    mode, draws, samples, window, k, corpus = st.mode, st.draws, st.samples, st.window, st.k, st.corpus
    suites, suite_n, seed, batch_size = st.suites, st.suite_n, st.seed, st.batch_size
    loaded = load_for_metric(model, device, dtype)
    f = loaded.facts
    target = parse_heads(heads, f.n_layers, f.n_heads)
    if not target:
        raise HeadlabError("no heads to ablate (--heads L.H,...)")
    slash_ids = loaded.ids_containing("/")
    docs = documents(list(corpus) if corpus else None)
    half = max(1, samples // 2)
    picked: list[Sample] = []
    for filt in ("with-target", "without-target"):
        sampler = Sampler(loaded.tokenizer, min(window, f.max_length), seed=seed, target_ids=slash_ids,
                          target_filter=filt)  # type: ignore[arg-type]
        picked += list(sampler.samples(docs, half))
    has_slash = [any(i in slash_ids for i in s.input_ids) for s in picked]
    if not any(has_slash):
        raise HeadlabError("the corpus has no sample with '/'; pass --corpus with slash text")
    if all(has_slash):
        raise HeadlabError("every sample of the corpus has '/', but the effect is compared with text without '/'; "
                           "pass --corpus with some text without '/'")
    dev = device_of(loaded.model)
    parts = [Part("corpus", [collate(picked[i:i + batch_size], loaded.pad_id, f.causal, dev)
                             for i in range(0, len(picked), batch_size)], stimuli=False)]
    parts += [_suite_part(loaded, s, suite_n, seed, batch_size) for s in suites]
    means = _means(loaded, parts[0].batches) if mode == "mean" else None
    for part in parts:
        part.base_hidden = reference_hidden(loaded, part.batches)
        if mode == "resample":
            part.sources = _resample_sources(loaded, part.batches)
    rng = random.Random(seed)
    conds = [("base", {}), ("target", target)] + [(f"control{i}", matched_control(target, f.n_heads, rng))
                                                   for i in range(draws)]
    bar = progress_bar(len(conds), f"ablate {loaded.name}", "condition", progress)
    res = {}
    for name, hs in conds:
        res[name] = run_condition(loaded, parts, hs, mode, means, slash_ids, k)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return _report(loaded, target, mode, draws, res, parts, k)


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


def _report(loaded: LoadedModel, target: HeadSet, mode: str, draws: int, res: dict[str, Condition],
            parts: list[Part], k: int) -> AblateResult:
    causal = loaded.facts.causal
    names = metric_names(loaded)
    rng = np.random.default_rng(0)
    # control on the primary metric (loss or cosine distance) of slash tokens in corpus text
    tgt = res["target"].near["corpus"][0]
    ctrl = np.stack([res[f"control{i}"].near["corpus"][0] for i in range(draws)])  # (draws, n)
    base = res["base"].near["corpus"][0] if causal else np.zeros_like(tgt)
    d_t = float(np.nanmean(tgt - base))
    d_c = np.nanmean(ctrl - base[None], axis=1)  # (draws,)
    lo, hi = _boot_diff(tgt - base, ctrl - base[None], rng)
    p = (1 + int((d_c >= d_t).sum())) / (1 + draws)
    suites = {part.name: {"near": _blocks(res, "near", part.name, names, causal, rng),
                          "away": _blocks(res, "away", part.name, names, causal, rng),
                          "n_items": int(sum(len(b.input_ids) for b in part.batches))}
              for part in parts[1:]}
    return AblateResult(
        model=loaded.name, mode=mode, heads=[Head(l, h) for l, hs in sorted(target.items()) for h in hs],
        metric=names[0], metrics=list(names),
        slash_definition=(f"targets within {k} tokens after a '/'" if causal else "the '/' positions"),
        slash=_blocks(res, "near", "corpus", names, causal, rng),
        no_slash=_blocks(res, "away", "corpus", names, causal, rng),
        control={"draws": draws, "matched": "same number of random heads per layer, never a target head",
                 "delta_target": d_t, "delta_mean": float(np.mean(d_c)),
                 "difference": float(d_t - np.mean(d_c)), "interval": [lo, hi], "p_value": p},
        suites=suites,
        n_samples=len(tgt), n_tokens=int(sum(int(b.attention_mask.sum()) for b in parts[0].batches)),
    )


def write_report(report: AblateResult, out_dir: str) -> None:

    report.write(Path(out_dir))


def format_report(r: AblateResult) -> str:
    m = r["metric"]
    c = r["control"]
    lines = [f"{r['model']}: {r['mode']}-ablating {len(r['heads'])} heads ({', '.join(r['heads'])}); "
             f"{r['n_samples']} samples, {r['n_tokens']} tokens; slash = {r['slash_definition']}"]

    def cells(block: dict[str, Any]) -> str:
        out = []
        for name, v in block.items():
            extra = (f" ({v['delta_points']:+.2f} points [{v['interval_points'][0]:+.2f}, "
                     f"{v['interval_points'][1]:+.2f}])") if "delta_points" in v else ""
            out.append(f"{name} {v['base']:.4f} -> {v['ablated']:.4f} (Δ {v['delta']:+.4f}{extra}; "
                       f"controls Δ {v['control_delta_mean']:+.4f})")
        return "; ".join(out)

    for part in ("slash", "no_slash"):
        lines.append(f"  {part:<9} " + cells(r[part]))
    for suite, v in r.suites.items():
        lines.append(f"  suite {suite} ({v['n_items']} items), near the symbol: " + cells(v["near"]))
    lines.append(f"  control   {c['draws']} matched random sets: Δ{m} on slash tokens {c['delta_mean']:+.4f}; "
                 f"target minus control {c['difference']:+.4f} [{c['interval'][0]:+.4f}, {c['interval'][1]:+.4f}], "
                 f"permutation p = {c['p_value']:.3f}")
    return "\n".join(lines)
