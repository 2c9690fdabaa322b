"""Importance of every head (``headlab importance``): exact single-head ablation and gradient gates.

* exact: the metric change when each head alone is zero-ablated (decoders: mean next-token loss in nats;
  encoders: mean cosine distance of the final hidden states to the plain model's), computed by
  :func:`headlab.ablation.sweep.sample_sweep`, which reuses the plain pass below each ablated layer;
* gradient (decoders): Michel et al. (2019), I_h = E_batches |∂L/∂g_h| for a gate g_h = 1 multiplying the
  head's slice of the output projection's input, then L2-normalised within each layer as in their paper;
  one forward and backward per batch. Encoders without a language-model head have no loss to differentiate:
  their gradient importance is not computed.
Both are reported with their Spearman rank correlation. The exact Δ carries a 95% bootstrap interval over the
samples (the metric pooled over each resample's tokens, the plain model's on the same resample subtracted), and
the heads of the exact top ten that the gradient ranks far lower are named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from headlab.ablation.metrics import load_for_metric, metric_batches, reference_hidden, token_metrics
from headlab.ablation.sweep import sample_sweep
from headlab.attention.interventions import Gate, intervene
from headlab.head import name as head_name
from headlab.io import write_text_atomic
from headlab.models import LoadedModel
from headlab.models.loaded import device_of
from headlab.result import Result
from headlab.settings import Settings, dtype_setting, setting
from headlab.values import ITEM_BYTES, Rule


def primary_metric(loaded: LoadedModel, batch: Any, base_hidden: torch.Tensor | None) -> np.ndarray:
    """Per-token (B, T) primary metric: next-token loss (decoders) or cosine distance to ``base_hidden``."""
    return token_metrics(loaded, batch, base_hidden)[0]


def _sample_metric(loaded: LoadedModel, batches: list[Any], base_hidden: list[torch.Tensor] | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per sample (N,): the sum and count of the plain model's per-token primary metric."""
    sums, counts = [], []
    for i, b in enumerate(batches):
        v = primary_metric(loaded, b, base_hidden[i] if base_hidden else None)
        ok = ~np.isnan(v)
        sums.append(np.where(ok, v, 0.0).sum(-1))
        counts.append(ok.sum(-1))
    return np.concatenate(sums).astype(np.float64), np.concatenate(counts).astype(np.float64)


def pooled_metric(loaded: LoadedModel, batches: list[Any], base_hidden: list[torch.Tensor] | None) -> float:
    """The per-token primary metric pooled over every scored token of ``batches``."""
    sums, counts = _sample_metric(loaded, batches, base_hidden)
    return float(sums.sum() / max(counts.sum(), 1))


#: bootstrap resamples of the exact Δ's interval
RESAMPLES = 1000


def delta_intervals(sums: np.ndarray, counts: np.ndarray, base_sums: np.ndarray, base_counts: np.ndarray,
                    seed: int, resamples: int = RESAMPLES) -> np.ndarray:
    """(L, H, 2) 95% percentile interval of each head's pooled Δ over ``resamples`` resamples of the samples;
    ``sums``/``counts`` (N, L, H) ablated, ``base_*`` (N,) plain."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(base_sums), (resamples, len(base_sums)))
    base = base_sums[idx].sum(1) / np.maximum(base_counts[idx].sum(1), 1)  # (R,)
    deltas = sums[idx].sum(1) / np.maximum(counts[idx].sum(1), 1) - base[:, None, None]  # (R, L, H)
    return np.moveaxis(np.percentile(deltas, [2.5, 97.5], axis=0), 0, -1)


#: a head of the exact top ``TOP`` is named when the gradient ranks it below ``FAR`` times that (ours)
TOP, FAR = 10, 3


def disagreements(heads: list[dict[str, Any]]) -> list[str]:
    """Heads of the exact top ten that the gradient ranks below thirty: ``L.H (exact #i, gradient #j)``."""
    if any(h.get("gradient") is None for h in heads):
        return []
    by_grad = {h["name"]: r for r, h in enumerate(sorted(heads, key=lambda h: -h["gradient"]), 1)}
    top = sorted(heads, key=lambda h: -h["exact_delta"])[:TOP]
    return [f"{h['name']} (exact #{r}, gradient #{by_grad[h['name']]})" for r, h in enumerate(top, 1)
            if by_grad[h["name"]] > FAR * TOP]


def _gates(model: torch.nn.Module, n_layers: int, n_heads: int, gates: torch.Tensor) -> Any:
    """Multiply each head's slice of the output-projection input by ``gates[layer, head]``."""
    return intervene(model, {layer: [Gate(gates[layer])] for layer in range(n_layers)})


def gradient_importance(loaded: LoadedModel, batches: list[Any]) -> np.ndarray:
    """(L, H) Michel et al. importance, L2-normalised per layer (decoders)."""
    f = loaded.facts
    gates = torch.ones(f.n_layers, f.n_heads, requires_grad=True, device=device_of(loaded.model))
    flags = [p.requires_grad for p in loaded.model.parameters()]
    total = torch.zeros(f.n_layers, f.n_heads)
    try:
        for p in loaded.model.parameters():
            p.requires_grad_(False)  # only the gates need gradients
        with _gates(loaded.model, f.n_layers, f.n_heads, gates):
            for b in batches:
                out = loaded.model(input_ids=b.input_ids, attention_mask=b.attention_mask.long(), use_cache=False)
                logits = out.logits[:, :-1].float()
                tgt = b.input_ids[:, 1:].masked_fill(~b.attention_mask[:, 1:], -100)
                loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), tgt, ignore_index=-100)
                (grad,) = torch.autograd.grad(loss, gates)
                total += grad.abs().cpu()
    finally:
        for p, flag in zip(loaded.model.parameters(), flags):
            p.requires_grad_(flag)
    imp = total / len(batches)
    return (imp / imp.norm(dim=1, keepdim=True).clamp_min(1e-20)).numpy()


#: Spearman correlation below which the gradient ranking is said to disagree with the exact one (ours)
AGREE = 0.7


def ranking_note(rho: float) -> str:
    """What the rank agreement says, and which ranking to trust where they part."""
    said = f"Spearman(exact, gradient) = {rho:.3f}"
    if rho >= AGREE:
        return f"{said}: the gradient ranking agrees with the exact one"
    return (f"{said}: the gradient ranking disagrees with the exact one (below {AGREE}, ours); trust the exact Δ, "
            "the metric's change when the head alone is zeroed; the gradient is a first-order estimate of it")


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = np.argsort(np.argsort(a.ravel())).astype(float)
    rb = np.argsort(np.argsort(b.ravel())).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])


@dataclass
class ImportanceResult(Result):
    """``importance.json``: every head's exact single-head ablation effect and gradient importance."""

    KIND = "importance.json"
    COMPANIONS = ("importance.md",)
    model: str
    metric: str
    base: float
    n_samples: int
    n_tokens: int
    gradient: str
    spearman_exact_vs_gradient: float | None
    heads: list[dict[str, Any]]
    interval: str | None = None  # how each head's ``interval`` was drawn (None: written before intervals)

    def markdown(self, top: int = TOP) -> str:
        """The ``top`` heads by exact importance with their interval and gradient importance, the rank agreement
        and the top heads the gradient ranks far lower."""
        lines = [f"**{self.model}**: {self.n_samples} samples, {self.n_tokens} tokens; metric {self.metric}, base "
                 f"{self.base:.4f}", "", "| head | exact Δ | 95% interval | gradient |", "|---|---|---|---|"]
        for h in sorted(self.heads, key=lambda h: -h["exact_delta"])[:top]:
            grad = "-" if h.get("gradient") is None else f"{h['gradient']:.3f}"
            iv = h.get("interval")
            iv_text = "-" if iv is None else f"[{iv[0]:+.4f}, {iv[1]:+.4f}]"
            lines.append(f"| {h['name']} | {h['exact_delta']:+.4f} | {iv_text} | {grad} |")
        if self.interval:
            lines += ["", f"Intervals: {self.interval}."]
        if self.spearman_exact_vs_gradient is not None:
            lines += ["", ranking_note(self.spearman_exact_vs_gradient)]
        far = disagreements(self.heads)
        if far:
            lines += ["", f"Of the exact top {TOP}, the gradient ranks these below {FAR * TOP}: {', '.join(far)}."]
        return "\n".join(lines) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "importance.md", self.markdown())

    def records(self) -> list[dict[str, Any]]:
        """One row per head: the exact single-head ablation change and the gradient importance."""
        return [dict(h) for h in self.heads]


@dataclass(frozen=True)
class ImportanceSettings(Settings):
    """The data the metric is measured on, shared by ``headlab importance`` and ``headlab prune``: ``samples``
    windows of ``window`` tokens from ``corpus`` drawn with ``seed``; ``batch_size``; the weights' ``dtype``."""

    FAMILY: ClassVar[str] = "importance"
    LISTS: ClassVar[tuple[str, ...]] = ("corpus",)

    samples: int = setting(32, "corpus windows the metric is measured on", rule=Rule("whole", 2, each=ITEM_BYTES))
    window: int = setting(64, "tokens per window")
    corpus: tuple[str, ...] | None = setting(None, "named sources or files/folders (default: wiki pydoc)",
                                             metavar="SRC", paths=True, annotation="Sequence[str] | None")
    seed: int = setting(0, "random seed (sample order)")
    batch_size: int = setting(8, "samples per forward pass")
    dtype: str = dtype_setting()


#: importance given no options
IMPORTANCE = ImportanceSettings()


def importance(model: str | LoadedModel, settings: ImportanceSettings = IMPORTANCE, *, progress: bool,
               device: str, batches: list[Any] | None = None,
               base_hidden: list[torch.Tensor] | None = None) -> ImportanceResult:
    """Exact and (for decoders) gradient importance of every head; returns the ``importance.json`` record.

    ``batches`` (and, for encoders, their ``base_hidden``) let a caller that measures more on the same data
    (pruning) build them once."""
    st = settings
    loaded = load_for_metric(model, device, st.dtype)
    f = loaded.facts
    if batches is None:
        batches = metric_batches(loaded, st.samples, st.window, st.seed, st.batch_size, st.corpus)
    if base_hidden is None:
        base_hidden = reference_hidden(loaded, batches)
    with torch.inference_mode():
        base_sums, base_counts = _sample_metric(loaded, batches, base_hidden) if f.causal else (
            np.zeros(sum(len(b.input_ids) for b in batches)), np.ones(sum(len(b.input_ids) for b in batches)))
    base = float(base_sums.sum() / max(base_counts.sum(), 1))
    sums, counts = sample_sweep(loaded, batches, base_hidden, primary_metric, progress=progress)
    exact = sums.sum(0) / np.maximum(counts.sum(0), 1) - base
    bounds = delta_intervals(sums, counts, base_sums, base_counts, st.seed)
    grad = gradient_importance(loaded, batches) if f.causal else None
    metric = "next-token loss (nats)" if f.causal else "cosine distance of final hidden states"
    return ImportanceResult(
        model=loaded.name, metric=metric, base=base, n_samples=sum(len(b.input_ids) for b in batches),
        n_tokens=int(sum(int(b.attention_mask.sum()) for b in batches)),
        gradient="Michel et al. 2019, |dL/dgate| averaged over batches, L2-normalised per layer"
                 if grad is not None else "not computed: encoder without a language-model head",
        spearman_exact_vs_gradient=spearman(exact, grad) if grad is not None else None,
        heads=[{"layer": l, "head": h, "name": head_name(l, h), "exact_delta": float(exact[l, h]),
                "interval": [float(bounds[l, h, 0]), float(bounds[l, h, 1])],
                "gradient": None if grad is None else float(grad[l, h])}
               for l in range(f.n_layers) for h in range(f.n_heads)],
        interval=f"95% percentile bootstrap over the {len(base_sums)} samples ({RESAMPLES} resamples, seed "
                 f"{st.seed}), the metric pooled over each resample's tokens minus the plain model's",
    )


def format_importance(r: ImportanceResult, top: int = TOP) -> str:
    heads = sorted(r["heads"], key=lambda h: -h["exact_delta"])[:top]
    lines = [f"{r['model']}: head importance on {r['n_samples']} samples ({r['n_tokens']} tokens); metric "
             f"{r['metric']}, base {r['base']:.4f}",
             f"  top {top} by exact Δ: " + "  ".join(f"{h['name']} {h['exact_delta']:+.4f}" for h in heads)]
    if r["spearman_exact_vs_gradient"] is not None:
        g = sorted(r["heads"], key=lambda h: -(h["gradient"] or 0))[:top]
        lines.append(f"  top {top} by gradient: " + "  ".join(f"{h['name']} {h['gradient']:.3f}" for h in g))
        lines.append("  " + ranking_note(r["spearman_exact_vs_gradient"]))
        far = disagreements(r["heads"])
        if far:
            lines.append(f"  of the exact top {TOP}, the gradient ranks these below {FAR * TOP}: {', '.join(far)}")
    return "\n".join(lines)
