"""Group ablation with a matched random control (``headlab ablate``).

Metric (per token, in the model's units):
* decoders with a language-model head: next-token loss (nats) and accuracy; ``slash`` tokens are targets
  within ``k`` tokens after a `/` token (``k = 3``), ``no_slash`` tokens are all targets of samples without `/`;
* encoders: cosine distance 1 − cos between the ablated and the plain final hidden state; ``slash`` tokens
  are the `/` positions, ``no_slash`` all tokens of samples without `/`.
The control ablates, in each of ``draws`` draws, as many random heads per layer as the target set has there
(never a target head). Reported: the target set's effect, the controls' mean effect, their difference with a
bootstrap 95% interval over samples, and a permutation p-value: the share of control draws whose effect on
slash tokens is at least the target set's, (1 + count) / (1 + draws).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from ..corpus import Sample, Sampler, documents
from ..engine import collate
from ..errors import HeadlabError
from ..io import write_json_atomic
from ..models import LoadedModel, load
from ..models.loaded import device_of
from ..progress import bar as progress_bar
from .heads import HeadSet, ablate, parse_heads, record_head_inputs


def _token_metric(loaded: LoadedModel, batch: Any, base_hidden: torch.Tensor | None) -> tuple[np.ndarray, ...]:
    """Per-token values (B, T) of the metric(s); NaN where not scored."""
    model = loaded.model
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask.long(),
                **({"use_cache": False} if loaded.facts.causal else {}))
    if loaded.facts.causal:
        logits = out.logits[:, :-1].float()  # predicts tokens 1..T-1
        tgt = batch.input_ids[:, 1:]
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), tgt, reduction="none")
        acc = (logits.argmax(-1) == tgt).float()
        valid = batch.attention_mask[:, 1:]
        pad = lambda x: torch.cat([torch.full_like(x[:, :1], float("nan")), torch.where(valid, x, float("nan"))], 1)  # noqa: E731
        return pad(loss).numpy(), pad(acc).numpy()
    hidden = out.last_hidden_state.float()
    if base_hidden is None:
        return (hidden.numpy(),)
    cos = torch.nn.functional.cosine_similarity(hidden, base_hidden, dim=-1)
    return (torch.where(batch.attention_mask, 1 - cos, float("nan")).numpy(),)


@dataclass
class Condition:
    """Per-sample means of each metric on slash and no-slash tokens: arrays (n_samples,)."""

    slash: list[np.ndarray]
    no_slash: list[np.ndarray]


def _masks(batch: Any, slash_ids: frozenset[int], causal: bool, k: int) -> tuple[np.ndarray, np.ndarray]:
    ids = batch.input_ids
    is_slash = torch.zeros_like(ids, dtype=torch.bool)
    for i in slash_ids:
        is_slash |= ids == i
    is_slash &= batch.attention_mask
    has = is_slash.any(-1, keepdim=True)
    if causal:  # target t is within k tokens after a '/' at t-k..t-1
        near = torch.zeros_like(is_slash)
        for s in range(1, k + 1):
            near[:, s:] |= is_slash[:, :-s]
        slash_tok = near & batch.attention_mask
    else:
        slash_tok = is_slash
    return slash_tok.numpy(), (~has & batch.attention_mask).numpy()


def _per_sample(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    v = np.where(mask & ~np.isnan(values), values, 0.0).sum(-1)
    n = (mask & ~np.isnan(values)).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, v / np.maximum(n, 1), np.nan)


def run_condition(loaded: LoadedModel, batches: list[Any], heads: HeadSet, mode: str, means: dict | None,
                  slash_ids: frozenset[int], k: int, base_hidden: list | None) -> Condition:
    f = loaded.facts
    slash: list[list[np.ndarray]] = []
    plain: list[list[np.ndarray]] = []
    with torch.inference_mode(), ablate(loaded.model, f.n_layers, f.n_heads, heads, mode, means):
        for i, b in enumerate(batches):
            vals = _token_metric(loaded, b, base_hidden[i] if base_hidden else None)
            sm, nm = _masks(b, slash_ids, f.causal, k)
            slash.append([_per_sample(v, sm) for v in vals])
            plain.append([_per_sample(v, nm) for v in vals])
    cat = lambda rows: [np.concatenate([r[j] for r in rows]) for j in range(len(rows[0]))]  # noqa: E731
    return Condition(cat(slash), cat(plain))


def load_for_metric(model: str | LoadedModel, device: str = "cpu") -> LoadedModel:
    """Decoders need their language-model head for the loss; encoders are measured on hidden states."""
    if isinstance(model, LoadedModel):
        loaded = model
    else:
        loaded = load(model, device=device)
        if loaded.facts.causal:
            loaded = load(model, lm_head=True, device=device)
    if loaded.facts.causal and getattr(loaded.model, "get_output_embeddings", lambda: None)() is None:
        raise HeadlabError(f"{loaded.name}: decoder metrics need a model loaded with lm_head=True")
    return loaded


def metric_batches(loaded: LoadedModel, samples: int, window: int, seed: int, batch_size: int,
                   corpus: Sequence[str] | None = None) -> list[Any]:
    """Padded batches of ``samples`` seeded corpus windows, for the metrics of importance and pruning."""
    f = loaded.facts
    picked = list(Sampler(loaded.tokenizer, min(window, f.max_length), seed=seed).samples(
        documents(list(corpus) if corpus else None), samples))
    if not picked:
        raise HeadlabError("the corpus produced no samples")
    dev = device_of(loaded.model)
    return [collate(picked[i:i + batch_size], loaded.pad_id, f.causal, dev) for i in range(0, len(picked), batch_size)]


def reference_hidden(loaded: LoadedModel, batches: list[Any]) -> list[torch.Tensor] | None:
    """Plain final hidden states per batch (the reference of the encoder metric); None for decoders."""
    if loaded.facts.causal:
        return None
    with torch.inference_mode():
        return [loaded.model(input_ids=b.input_ids, attention_mask=b.attention_mask.long()).last_hidden_state.float()
                for b in batches]


def matched_control(heads: HeadSet, n_heads: int, rng: random.Random) -> dict[int, list[int]]:
    out = {}
    for layer, hs in heads.items():
        pool = [h for h in range(n_heads) if h not in set(hs)]
        if len(pool) < len(set(hs)):
            raise HeadlabError(f"layer {layer}: not enough other heads for a matched control")
        out[layer] = rng.sample(pool, len(set(hs)))
    return out


def ablate_experiment(model: str | LoadedModel, heads: str | Sequence[str], *, mode: str = "zero", draws: int = 20,
                      samples: int = 48, window: int = 64, k: int = 3, corpus: Sequence[str] | None = None,
                      seed: int = 0, batch_size: int = 8, progress: bool = True, device: str = "cpu") -> dict[str, Any]:
    """Ablate ``heads`` together and ``draws`` matched random sets; return the ``ablate.json`` record."""
    loaded = load_for_metric(model, device)
    f = loaded.facts
    target = parse_heads(heads, f.n_layers, f.n_heads)
    if not target:
        raise HeadlabError("no heads to ablate (--heads L.H,...)")
    if draws < 1:
        raise HeadlabError("--draws must be at least 1")
    slash_ids = loaded.ids_containing("/")
    docs = documents(list(corpus) if corpus else None)
    half = max(1, samples // 2)
    picked: list[Sample] = []
    for filt in ("with-target", "without-target"):
        sampler = Sampler(loaded.tokenizer, min(window, f.max_length), seed=seed, target_ids=slash_ids,
                          target_filter=filt)  # type: ignore[arg-type]
        picked += list(sampler.samples(docs, half))
    if not any(any(i in slash_ids for i in s.input_ids) for s in picked):
        raise HeadlabError("the corpus has no sample with '/'; pass --corpus with slash text")
    dev = device_of(loaded.model)
    batches = [collate(picked[i:i + batch_size], loaded.pad_id, f.causal, dev) for i in range(0, len(picked), batch_size)]
    means = None
    if mode == "mean":
        sums: dict[int, torch.Tensor] = {}
        count = 0
        with torch.inference_mode():
            for b in batches:
                rec: dict[int, torch.Tensor] = {}
                with record_head_inputs(loaded.model, f.n_layers, f.n_heads, rec):
                    loaded.model(input_ids=b.input_ids, attention_mask=b.attention_mask.long())
                m = b.attention_mask[:, :, None, None].to(torch.float32)
                for layer, z in rec.items():
                    sums[layer] = sums.get(layer, 0) + (z * m).sum((0, 1))
                count += int(b.attention_mask.sum())
        means = {layer: s / count for layer, s in sums.items()}
    base_hidden = reference_hidden(loaded, batches)
    rng = random.Random(seed)
    conds = [("base", {}), ("target", target)] + [(f"control{i}", matched_control(target, f.n_heads, rng))
                                                   for i in range(draws)]
    bar = progress_bar(len(conds), f"ablate {loaded.name}", "condition", progress)
    res = {}
    for name, hs in conds:
        res[name] = run_condition(loaded, batches, hs, mode, means, slash_ids, k, base_hidden)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return _report(loaded, target, mode, draws, res, batches, k)


def _report(loaded: LoadedModel, target: HeadSet, mode: str, draws: int, res: dict[str, Condition],
            batches: list[Any], k: int) -> dict[str, Any]:
    causal = loaded.facts.causal
    names = ["loss", "accuracy"] if causal else ["cosine_distance"]
    rng = np.random.default_rng(0)

    def block(part: str, j: int) -> dict[str, Any]:
        per = {c: getattr(r, part)[j] for c, r in res.items()}
        base = float(np.nanmean(per["base"])) if causal else 0.0
        abl = float(np.nanmean(per["target"]))
        out = {"base": base, "ablated": abl, "delta": abl - base}
        if names[j] == "accuracy":
            out["delta_points"] = 100 * (abl - base)
        return out

    # control on the primary metric (loss or cosine distance) of slash tokens
    tgt = res["target"].slash[0]
    ctrl = np.stack([res[f"control{i}"].slash[0] for i in range(draws)])  # (draws, n)
    base = res["base"].slash[0] if causal else np.zeros_like(tgt)
    d_t = np.nanmean(tgt - base)
    d_c = np.nanmean(ctrl - base[None], axis=1)  # (draws,)
    n = len(tgt)
    boots = []
    for _ in range(1000):
        idx = rng.integers(0, n, n)
        boots.append(np.nanmean(tgt[idx] - base[idx]) - np.nanmean(ctrl[:, idx] - base[None, idx]))
    lo, hi = np.nanpercentile(boots, [2.5, 97.5])
    p = (1 + int((d_c >= d_t).sum())) / (1 + draws)
    return {
        "model": loaded.name, "mode": mode, "heads": [f"{l}.{h}" for l, hs in sorted(target.items()) for h in hs],
        "metric": names[0] if causal else "cosine_distance",
        "metrics": names, "slash_definition": (f"targets within {k} tokens after a '/'" if causal
                                               else "the '/' positions"),
        "slash": {m: block("slash", j) for j, m in enumerate(names)},
        "no_slash": {m: block("no_slash", j) for j, m in enumerate(names)},
        "control": {"draws": draws, "matched": "same number of random heads per layer, never a target head",
                    "delta_target": float(d_t), "delta_mean": float(np.mean(d_c)),
                    "difference": float(d_t - np.mean(d_c)), "interval": [float(lo), float(hi)],
                    "p_value": p},
        "n_samples": n, "n_tokens": int(sum(int(b.attention_mask.sum()) for b in batches)),
    }


def write_report(report: dict[str, Any], out_dir: str) -> None:
    from pathlib import Path

    write_json_atomic(Path(out_dir) / "ablate.json", report)


def format_report(r: dict[str, Any]) -> str:
    m = r["metric"]
    c = r["control"]
    lines = [f"{r['model']}: {r['mode']}-ablating {len(r['heads'])} heads ({', '.join(r['heads'])}); "
             f"{r['n_samples']} samples, {r['n_tokens']} tokens; slash = {r['slash_definition']}"]
    for part in ("slash", "no_slash"):
        cells = []
        for name, v in r[part].items():
            extra = f" ({v['delta_points']:+.2f} points)" if "delta_points" in v else ""
            cells.append(f"{name} {v['base']:.4f} -> {v['ablated']:.4f} (Δ {v['delta']:+.4f}{extra})")
        lines.append(f"  {part:<9} " + "; ".join(cells))
    lines.append(f"  control   {c['draws']} matched random sets: Δ{m} on slash tokens {c['delta_mean']:+.4f}; "
                 f"target minus control {c['difference']:+.4f} [{c['interval'][0]:+.4f}, {c['interval'][1]:+.4f}], "
                 f"permutation p = {c['p_value']:.3f}")
    return "\n".join(lines)
